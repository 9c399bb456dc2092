/**
 * The string notations of validation files and bundles (Permify's pkg/tuple and pkg/attribute):
 * `doc:1#owner@user:1`, `doc:1#viewer@group:1#member`, `doc:1$tags|string[]:a,b`.
 * Parts are split on `@`, `#`, `$`, `|` and `:` exactly like Permify, so ids cannot contain those characters.
 */
import { PembaError } from "../errors.ts";
import type {
  Attribute,
  AttributeScalar,
  AttributeType,
  AttributeValue,
  Entity,
  Subject,
  Tuple,
} from "../model.ts";

const invalid = (what: string, s: string): PembaError =>
  new PembaError("ERROR_CODE_VALIDATION", `invalid ${what}: "${s}"`);

/** `type:id` (Permify's tuple.E): trimmed, exactly one `:`, both parts non-empty. */
export function parseEntityString(s: string): Entity {
  const parts = s.trim().split(":");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") throw invalid("entity", s);
  return { type: parts[0], id: parts[1] };
}

/** Permify's tuple.EAR: `type:id[#relation]`, split on `#`; text after a second `#` is ignored. */
function entityAndRelation(s: string, what: string): { entity: Entity; relation: string } {
  const parts = s.trim().split("#");
  try {
    return { entity: parseEntityString(parts[0]), relation: parts[1] ?? "" };
  } catch {
    throw invalid(what, s);
  }
}

/** `type:id` or `type:id#relation`; `...` means no relation. */
export function parseSubjectString(s: string): Subject {
  const { entity, relation } = entityAndRelation(s, "subject");
  return { type: entity.type, id: entity.id, relation: relation === "..." ? "" : relation };
}

/**
 * `entity_type:entity_id#relation@subject_type:subject_id[#subject_relation]` (Permify's tuple.Tuple: split on
 * `@`, both sides parsed as `type:id[#relation]`; a missing relation is "" and fails schema validation later).
 */
export function parseTupleString(s: string): Tuple {
  const sides = s.trim().split("@");
  if (sides.length !== 2) throw invalid("tuple", s);
  try {
    const { entity, relation } = entityAndRelation(sides[0], "tuple");
    return { entity, relation, subject: parseSubjectString(sides[1]) };
  } catch {
    throw invalid("tuple", s);
  }
}

export function formatTuple(t: Tuple): string {
  const subject = `${t.subject.type}:${t.subject.id}${t.subject.relation ? `#${t.subject.relation}` : ""}`;
  return `${t.entity.type}:${t.entity.id}#${t.relation}@${subject}`;
}

const TYPE_NAMES: Record<string, AttributeType> = {
  boolean: "ATTRIBUTE_TYPE_BOOLEAN",
  "boolean[]": "ATTRIBUTE_TYPE_BOOLEAN_ARRAY",
  string: "ATTRIBUTE_TYPE_STRING",
  "string[]": "ATTRIBUTE_TYPE_STRING_ARRAY",
  integer: "ATTRIBUTE_TYPE_INTEGER",
  "integer[]": "ATTRIBUTE_TYPE_INTEGER_ARRAY",
  double: "ATTRIBUTE_TYPE_DOUBLE",
  "double[]": "ATTRIBUTE_TYPE_DOUBLE_ARRAY",
};

const NAME_OF_TYPE = Object.fromEntries(Object.entries(TYPE_NAMES).map(([k, v]) => [v, k])) as Record<
  AttributeType,
  string
>;

/** The schema language's word for an attribute type: `ATTRIBUTE_TYPE_INTEGER_ARRAY` -> `integer[]`. */
export function attributeTypeWord(type: AttributeType): string {
  return NAME_OF_TYPE[type];
}

/** Go's strconv.ParseBool spellings. */
function parseGoBool(s: string): boolean | undefined {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(s)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(s)) return false;
  return undefined;
}

/** strconv.ParseInt(s, 10, 32). */
function parseGoInt32(s: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = Number(s);
  return n >= -2147483648 && n <= 2147483647 ? n : undefined;
}

/** strconv.ParseFloat(s, 64) for decimal notation, inf/infinity and nan; out of range is an error as in Go. */
function parseGoFloat(s: string): number | undefined {
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(s);
  if (special) {
    if (special[2].toLowerCase() === "nan") return Number.NaN;
    return special[1] === "-" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  }
  if (!/^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/.test(s)) return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}

function parseScalar(kind: string, s: string): AttributeScalar | undefined {
  switch (kind) {
    case "boolean":
      return parseGoBool(s);
    case "integer":
      return parseGoInt32(s);
    case "double":
      return parseGoFloat(s);
    default:
      return s;
  }
}

/** Parses the `type:value` part of an attribute string. */
export function parseAttributeValue(typeName: string, raw: string): AttributeValue | undefined {
  const type = Object.hasOwn(TYPE_NAMES, typeName) ? TYPE_NAMES[typeName] : undefined;
  if (type === undefined) return undefined;
  if (typeName.endsWith("[]")) {
    const kind = typeName.slice(0, -2);
    const items: AttributeScalar[] = [];
    for (const part of raw.split(",")) {
      const v = parseScalar(kind, part);
      if (v === undefined) return undefined;
      items.push(v);
    }
    return { type, data: items };
  }
  const v = parseScalar(typeName, raw);
  return v === undefined ? undefined : { type, data: v };
}

/**
 * `entity_type:entity_id$attribute|type:value` (Permify's attribute.Attribute: split on `|`, then `$`, then `:`;
 * every part non-empty, so an empty value is invalid).
 */
export function parseAttributeString(s: string): Attribute {
  const sides = s.trim().split("|");
  if (sides.length !== 2 || sides[0] === "" || sides[1] === "") throw invalid("attribute", s);
  const entityAndName = sides[0].split("$");
  if (entityAndName.length !== 2 || entityAndName[0] === "" || entityAndName[1] === "")
    throw invalid("attribute", s);
  const entity = entityAndName[0].split(":");
  if (entity.length !== 2 || entity[0] === "" || entity[1] === "") throw invalid("attribute", s);
  const typeAndValue = sides[1].split(":");
  if (typeAndValue.length !== 2 || typeAndValue[0] === "" || typeAndValue[1] === "")
    throw invalid("attribute", s);
  const value = parseAttributeValue(typeAndValue[0], typeAndValue[1]);
  if (value === undefined) throw invalid("attribute", s);
  return { entity: { type: entity[0], id: entity[1] }, attribute: entityAndName[1], value };
}

/** Go's FormatBool / Itoa / FormatFloat(v, 'f', -1, 64): no exponent notation. */
function formatScalar(v: AttributeScalar): string {
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number" && Number.isFinite(v) && String(v).includes("e")) {
    return v.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 100 });
  }
  if (typeof v === "number" && !Number.isFinite(v)) return Number.isNaN(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
  return String(v);
}

export function formatAttribute(a: Attribute): string {
  const data = a.value.data;
  const value = Array.isArray(data) ? data.map(formatScalar).join(",") : formatScalar(data);
  return `${a.entity.type}:${a.entity.id}$${a.attribute}|${NAME_OF_TYPE[a.value.type]}:${value}`;
}
