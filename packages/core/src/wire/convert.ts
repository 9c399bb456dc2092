/**
 * Model values <-> Permify's JSON: tuples, attributes (values as protobuf Any), contexts and filters. Responses always
 * carry every field (protojson EmitUnpopulated).
 */

import { PembaError } from "../errors.ts";
import { formatRfc3339, parseRfc3339 } from "../expiry.ts";
import type {
  Attribute,
  AttributeFilter,
  AttributeType,
  AttributeValue,
  Context,
  Tuple,
  TupleFilter,
} from "../model.ts";
import type { WireAttribute, WireAttributeValue, WireContext, WireTuple, WireTupleFilter } from "./common.ts";

const TYPE_URL_PREFIX = "type.googleapis.com/base.v1.";

const TYPE_BY_MESSAGE: Record<string, AttributeType> = {
  BooleanValue: "ATTRIBUTE_TYPE_BOOLEAN",
  BooleanArrayValue: "ATTRIBUTE_TYPE_BOOLEAN_ARRAY",
  StringValue: "ATTRIBUTE_TYPE_STRING",
  StringArrayValue: "ATTRIBUTE_TYPE_STRING_ARRAY",
  IntegerValue: "ATTRIBUTE_TYPE_INTEGER",
  IntegerArrayValue: "ATTRIBUTE_TYPE_INTEGER_ARRAY",
  DoubleValue: "ATTRIBUTE_TYPE_DOUBLE",
  DoubleArrayValue: "ATTRIBUTE_TYPE_DOUBLE_ARRAY",
};

const MESSAGE_BY_TYPE = Object.fromEntries(Object.entries(TYPE_BY_MESSAGE).map(([m, t]) => [t, m])) as Record<
  AttributeType,
  string
>;

/** The short forms Pemba accepts besides the Any form (Permify rejects them as an empty Any). */
const SHORT_FORMS: [string, AttributeType][] = [
  ["boolean", "ATTRIBUTE_TYPE_BOOLEAN"],
  ["string", "ATTRIBUTE_TYPE_STRING"],
  ["integer", "ATTRIBUTE_TYPE_INTEGER"],
  ["double", "ATTRIBUTE_TYPE_DOUBLE"],
  ["boolean_array", "ATTRIBUTE_TYPE_BOOLEAN_ARRAY"],
  ["string_array", "ATTRIBUTE_TYPE_STRING_ARRAY"],
  ["integer_array", "ATTRIBUTE_TYPE_INTEGER_ARRAY"],
  ["double_array", "ATTRIBUTE_TYPE_DOUBLE_ARRAY"],
];

const invalid = (message: string) => new PembaError("ERROR_CODE_INVALID_ARGUMENT", message, { grpcCode: 3 });

function scalar(type: AttributeType, v: unknown): boolean | string | number {
  switch (type) {
    case "ATTRIBUTE_TYPE_BOOLEAN":
    case "ATTRIBUTE_TYPE_BOOLEAN_ARRAY":
      if (typeof v === "boolean") return v;
      throw invalid(`invalid value for bool type: ${JSON.stringify(v)}`);
    case "ATTRIBUTE_TYPE_STRING":
    case "ATTRIBUTE_TYPE_STRING_ARRAY":
      if (typeof v === "string") return v;
      throw invalid(`invalid value for string type: ${JSON.stringify(v)}`);
    case "ATTRIBUTE_TYPE_INTEGER":
    case "ATTRIBUTE_TYPE_INTEGER_ARRAY": {
      const n = typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v;
      if (typeof n === "number" && Number.isInteger(n) && n >= -2147483648 && n <= 2147483647) return n;
      throw invalid(`invalid value for int32 type: ${JSON.stringify(v)}`);
    }
    default: {
      const n = typeof v === "string" && v.trim() !== "" && !Number.isNaN(Number(v)) ? Number(v) : v;
      if (typeof n === "number") return n;
      throw invalid(`invalid value for double type: ${JSON.stringify(v)}`);
    }
  }
}

function typedValue(type: AttributeType, data: unknown): AttributeValue {
  if (type.endsWith("_ARRAY")) {
    if (data === undefined || data === null) return { type, data: [] };
    if (!Array.isArray(data)) throw invalid(`invalid value for list type: ${JSON.stringify(data)}`);
    return { type, data: data.map((d) => scalar(type, d)) };
  }
  if (data === undefined || data === null) {
    // proto3 default of the wrapped field
    const zero = type === "ATTRIBUTE_TYPE_BOOLEAN" ? false : type === "ATTRIBUTE_TYPE_STRING" ? "" : 0;
    return { type, data: zero };
  }
  return { type, data: scalar(type, data) };
}

/**
 * An attribute value from the wire: the Any form or one short form key. Anything else is an empty Any, which
 * Permify answers with 404 ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH.
 */
export function attributeValueFromWire(v: WireAttributeValue): AttributeValue {
  const url = v["@type"];
  if (url !== undefined && url !== "") {
    const message = url.slice(url.lastIndexOf("/") + 1);
    const type = message.startsWith("base.v1.") ? TYPE_BY_MESSAGE[message.slice(8)] : undefined;
    if (type === undefined) throw invalid(`unable to resolve ${JSON.stringify(url)}: "not found"`);
    return typedValue(type, v.data);
  }
  const record = v as Record<string, unknown>;
  for (const [key, type] of SHORT_FORMS) {
    if (record[key] !== undefined) return typedValue(type, record[key]);
  }
  throw new PembaError("ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH");
}

export function attributeValueToWire(v: AttributeValue): { "@type": string; data: unknown } {
  return { "@type": TYPE_URL_PREFIX + MESSAGE_BY_TYPE[v.type], data: v.data };
}

export function tupleFromWire(t: WireTuple): Tuple {
  const out: Tuple = {
    entity: { type: t.entity.type, id: t.entity.id },
    relation: t.relation,
    subject: { type: t.subject.type, id: t.subject.id, relation: t.subject.relation },
  };
  if (t.expires_at !== undefined) out.expiresAt = parseRfc3339(t.expires_at);
  return out;
}

export function attributeFromWire(a: WireAttribute): Attribute {
  const out: Attribute = {
    entity: { type: a.entity.type, id: a.entity.id },
    attribute: a.attribute,
    value: attributeValueFromWire(a.value),
  };
  if (a.expires_at !== undefined) out.expiresAt = parseRfc3339(a.expires_at);
  return out;
}

/** `expires_at` only when the row has one: a Permify client that never sends it sees Permify's shapes. */

export function tupleToWire(t: Tuple) {
  const out: {
    entity: { type: string; id: string };
    relation: string;
    subject: { type: string; id: string; relation: string };
    expires_at?: string;
  } = {
    entity: { type: t.entity.type, id: t.entity.id },
    relation: t.relation,
    subject: { type: t.subject.type, id: t.subject.id, relation: t.subject.relation ?? "" },
  };
  if (t.expiresAt !== undefined) out.expires_at = formatRfc3339(t.expiresAt);
  return out;
}

export function attributeToWire(a: Attribute) {
  const out: {
    entity: { type: string; id: string };
    attribute: string;
    value: { "@type": string; data: unknown };
    expires_at?: string;
  } = {
    entity: { type: a.entity.type, id: a.entity.id },
    attribute: a.attribute,
    value: attributeValueToWire(a.value),
  };
  if (a.expiresAt !== undefined) out.expires_at = formatRfc3339(a.expiresAt);
  return out;
}

export function contextFromWire(c: WireContext | undefined): Context | undefined {
  if (c === undefined) return undefined;
  if (
    c.tuples.some((t) => t.expires_at !== undefined) ||
    c.attributes.some((a) => a.expires_at !== undefined)
  )
    throw invalid("expires_at is not allowed on contextual tuples and attributes");
  return {
    tuples: c.tuples.map(tupleFromWire),
    attributes: c.attributes.map(attributeFromWire),
    data: c.data,
  };
}

export function tupleFilterFromWire(f: WireTupleFilter): TupleFilter {
  return {
    entity: { type: f.entity?.type ?? "", ids: f.entity?.ids ?? [] },
    relation: f.relation,
    subject: { type: f.subject?.type ?? "", ids: f.subject?.ids ?? [], relation: f.subject?.relation ?? "" },
  };
}

export function attributeFilterFromWire(f: {
  entity?: { type: string; ids: string[] };
  attributes: string[];
}): AttributeFilter {
  return { entity: { type: f.entity?.type ?? "", ids: f.entity?.ids ?? [] }, attributes: f.attributes };
}
