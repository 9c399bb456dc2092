/** Turns a stored bundle + run arguments into one validated store write. */
import { PembaError } from "../errors.ts";
import type { Attribute, Tuple } from "../model.ts";
import type { SchemaDefinition } from "../schema/ast.ts";
import { parseAttributeString, parseTupleString, validateAttribute, validateTuple } from "../schema/index.ts";
import type { DataBundle, WriteRequest } from "../store/store.ts";
import { renderBundleTemplate } from "./bundle-template.ts";

export function runBundleOperations(
  schema: SchemaDefinition,
  bundle: DataBundle,
  args: Record<string, string>,
): WriteRequest {
  for (const name of bundle.arguments) {
    if (args[name] === undefined) throw new PembaError("ERROR_CODE_MISSING_ARGUMENT");
  }
  const tuples: Tuple[] = [];
  const attributes: Attribute[] = [];
  const deleteTuples: Tuple[] = [];
  const deleteAttributes: { entity: { type: string; id: string }; attribute: string }[] = [];
  for (const op of bundle.operations) {
    for (const t of op.relationships_write) {
      const tuple = parseTupleString(renderBundleTemplate(t, args));
      validateTuple(schema, tuple);
      tuples.push(tuple);
    }
    for (const t of op.relationships_delete)
      deleteTuples.push(parseTupleString(renderBundleTemplate(t, args)));
    for (const a of op.attributes_write) {
      const attribute = parseAttributeString(renderBundleTemplate(a, args));
      validateAttribute(schema, attribute);
      attributes.push(attribute);
    }
    for (const a of op.attributes_delete)
      deleteAttributes.push(parseAttributeReference(renderBundleTemplate(a, args)));
  }
  return { tuples, attributes, deleteTuples, deleteAttributes };
}

/** `type:id$attribute` (a value part, if present, is ignored). */
function parseAttributeReference(text: string): { entity: { type: string; id: string }; attribute: string } {
  const [entityPart, rest] = text.split("$");
  const [type, id] = entityPart.split(":");
  const attribute = rest?.split("|")[0];
  if (!type || !id || !attribute) throw new PembaError("ERROR_CODE_VALIDATION", `invalid attribute: ${text}`);
  return { entity: { type, id }, attribute };
}
