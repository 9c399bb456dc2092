/**
 * Permify's ValidateTuple / ValidateAttribute (internal/validation): data checked against a schema before it is
 * written. Errors carry the code name as message (Permify's wire behaviour).
 */
import { PembaError } from "../errors.ts";
import type { Attribute, AttributeScalar, AttributeType, Tuple } from "../model.ts";
import type { EntityDefinition, SchemaDefinition } from "./ast.ts";

function entityDefinition(schema: SchemaDefinition, type: string): EntityDefinition {
  const def = Object.hasOwn(schema.entities, type) ? schema.entities[type] : undefined;
  if (def === undefined) throw new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND");
  return def;
}

/** Entity type exists, entity != subject (same relation), relation exists, subject type[#relation] is allowed. */
export function validateTuple(schema: SchemaDefinition, tuple: Tuple): void {
  const def = entityDefinition(schema, tuple.entity.type);
  const subjectRelation = tuple.subject.relation === "..." ? "" : tuple.subject.relation;
  if (
    tuple.entity.type === tuple.subject.type &&
    tuple.entity.id === tuple.subject.id &&
    tuple.relation === subjectRelation
  ) {
    throw new PembaError("ERROR_CODE_ENTITY_AND_SUBJECT_CANNOT_BE_EQUAL");
  }
  const relation = Object.hasOwn(def.relations, tuple.relation) ? def.relations[tuple.relation] : undefined;
  if (relation === undefined) throw new PembaError("ERROR_CODE_RELATION_DEFINITION_NOT_FOUND");
  const allowed = relation.references.some(
    (r) => r.type === tuple.subject.type && r.relation === subjectRelation,
  );
  if (!allowed) throw new PembaError("ERROR_CODE_SUBJECT_TYPE_NOT_FOUND");
}

const SCALAR_CHECKS: Record<string, (v: AttributeScalar) => boolean> = {
  BOOLEAN: (v) => typeof v === "boolean",
  STRING: (v) => typeof v === "string",
  INTEGER: (v) => typeof v === "number" && Number.isInteger(v),
  DOUBLE: (v) => typeof v === "number",
};

function valueMatches(type: AttributeType, data: unknown): boolean {
  const name = type.replace("ATTRIBUTE_TYPE_", "");
  if (name.endsWith("_ARRAY")) {
    const check = SCALAR_CHECKS[name.slice(0, -"_ARRAY".length)];
    return Array.isArray(data) && data.every((v) => check(v));
  }
  return !Array.isArray(data) && SCALAR_CHECKS[name](data as AttributeScalar);
}

/** Entity type exists, attribute exists, the value's type is exactly the attribute's type. */
export function validateAttribute(schema: SchemaDefinition, attribute: Attribute): void {
  const def = entityDefinition(schema, attribute.entity.type);
  const attr = Object.hasOwn(def.attributes, attribute.attribute)
    ? def.attributes[attribute.attribute]
    : undefined;
  if (attr === undefined) throw new PembaError("ERROR_CODE_ATTRIBUTE_DEFINITION_NOT_FOUND");
  if (attribute.value.type !== attr.type || !valueMatches(attr.type, attribute.value.data)) {
    throw new PembaError("ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH");
  }
}
