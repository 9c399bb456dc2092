/** Data model shared by the engine, the stores and the HTTP layer. Field names follow Permify's wire names. */

export interface Entity {
  type: string;
  id: string;
}

/** A subject; `relation` is "" for a direct subject (never "..."). */
export interface Subject {
  type: string;
  id: string;
  relation: string;
}

export interface Tuple {
  entity: Entity;
  relation: string;
  subject: Subject;
  /**
   * Pemba extension: when the tuple stops counting (ms since the epoch, UTC); absent = never. A read at evaluation
   * time `at` sees the tuple only while `at < expiresAt` (see expiry.ts).
   */
  expiresAt?: number;
}

export type AttributeType =
  | "ATTRIBUTE_TYPE_BOOLEAN"
  | "ATTRIBUTE_TYPE_BOOLEAN_ARRAY"
  | "ATTRIBUTE_TYPE_STRING"
  | "ATTRIBUTE_TYPE_STRING_ARRAY"
  | "ATTRIBUTE_TYPE_INTEGER"
  | "ATTRIBUTE_TYPE_INTEGER_ARRAY"
  | "ATTRIBUTE_TYPE_DOUBLE"
  | "ATTRIBUTE_TYPE_DOUBLE_ARRAY";

export type AttributeScalar = boolean | string | number;
export type AttributeData = AttributeScalar | AttributeScalar[];

/** A typed attribute value: the type decides integer vs double and the wire `@type`. */
export interface AttributeValue {
  type: AttributeType;
  data: AttributeData;
}

export interface Attribute {
  entity: Entity;
  attribute: string;
  value: AttributeValue;
  /** Pemba extension: when the attribute stops counting (ms since the epoch, UTC); absent = never. */
  expiresAt?: number;
}

/** Request context: contextual tuples, contextual attributes and free-form `data` for rules. */
export interface Context {
  tuples: Tuple[];
  attributes: Attribute[];
  data: Record<string, unknown>;
}

export const emptyContext = (): Context => ({ tuples: [], attributes: [], data: {} });

export type CheckResult = "CHECK_RESULT_ALLOWED" | "CHECK_RESULT_DENIED";

/** Filters used by reads and deletes (Permify's TupleFilter / AttributeFilter). Empty strings/arrays = any. */
export interface TupleFilter {
  entity?: { type?: string; ids?: string[] };
  relation?: string;
  subject?: { type?: string; ids?: string[]; relation?: string };
}

export interface AttributeFilter {
  entity?: { type?: string; ids?: string[] };
  attributes?: string[];
}

export const tupleKey = (t: Tuple): string =>
  `${t.entity.type}:${t.entity.id}#${t.relation}@${t.subject.type}:${t.subject.id}${t.subject.relation ? `#${t.subject.relation}` : ""}`;

export const attributeKey = (a: { entity: Entity; attribute: string }): string =>
  `${a.entity.type}:${a.entity.id}$${a.attribute}`;
