/** Turns a stored bundle + run arguments into one validated store write. */
import { PembaError } from "../errors.ts";
import { parseRfc3339 } from "../expiry.ts";
import type { Attribute, Tuple } from "../model.ts";
import type { SchemaDefinition } from "../schema/ast.ts";
import { parseAttributeString, parseTupleString, validateAttribute, validateTuple } from "../schema/index.ts";
import type { DataBundle, WriteRequest } from "../store/store.ts";
import { renderBundleTemplate } from "./bundle-template.ts";

const EXPIRY_SUFFIX = /^(.*?)\s+expires_at=(\S*)$/;

/**
 * Pemba extension: a written relationship or attribute may end with ` expires_at=<RFC 3339>` (a template too, e.g.
 * `doc:{{.doc}}#viewer@user:{{.user}} expires_at={{.until}}`); Permify's strings never hold a space.
 */
function withExpiry<T extends Tuple | Attribute>(text: string, parse: (s: string) => T): T {
  const m = EXPIRY_SUFFIX.exec(text.trim());
  if (m === null) return parse(text);
  const expiresAt = parseRfc3339(m[2]);
  if (expiresAt === undefined)
    throw new PembaError("ERROR_CODE_VALIDATION", `invalid expires_at (want RFC 3339): ${m[2]}`);
  return { ...parse(m[1]), expiresAt };
}

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
      const tuple = withExpiry(renderBundleTemplate(t, args), parseTupleString);
      validateTuple(schema, tuple);
      tuples.push(tuple);
    }
    for (const t of op.relationships_delete)
      deleteTuples.push(parseTupleString(renderBundleTemplate(t, args)));
    for (const a of op.attributes_write) {
      const attribute = withExpiry(renderBundleTemplate(a, args), parseAttributeString);
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
