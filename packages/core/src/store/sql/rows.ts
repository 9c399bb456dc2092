/**
 * Rows as the drivers return them, keyed by the database column names and typed from the table definitions
 * (sqlite-tables.ts; pg-tables.ts names the same columns with the same types), and their mapping to the model.
 */
import type { Table } from "drizzle-orm";
import type { Attribute, AttributeValue, Tuple } from "../../model.ts";
import type { attributes, schemas, tenants, tuples } from "./sqlite-tables.ts";

/** Any row (a statement whose rows nobody reads by name). */
export type Row = Record<string, unknown>;

/** A row of `T` as a driver returns it: database column names, NULL where the column may be null. */
export type DbRow<T extends Table> = {
  [C in T["_"]["columns"][keyof T["_"]["columns"]] as C["_"]["name"]]: C["_"]["notNull"] extends true
    ? C["_"]["data"]
    : C["_"]["data"] | null;
};

/** `expires_at`: NULL for a row that never expires (every read selects it). */
export type TupleRow = Pick<
  DbRow<typeof tuples>,
  "entity_type" | "entity_id" | "relation" | "subject_type" | "subject_id" | "subject_relation"
> &
  Partial<Pick<DbRow<typeof tuples>, "expires_at">>;
export type AttributeRow = Pick<
  DbRow<typeof attributes>,
  "entity_type" | "entity_id" | "attribute" | "value_type" | "value"
> &
  Partial<Pick<DbRow<typeof attributes>, "expires_at">>;
export type TenantRow = DbRow<typeof tenants>;
export type SchemaRow = Pick<DbRow<typeof schemas>, "version" | "schema" | "created_at">;

export function rowToTuple(r: TupleRow): Tuple {
  const t: Tuple = {
    entity: { type: r.entity_type, id: r.entity_id },
    relation: r.relation,
    subject: { type: r.subject_type, id: r.subject_id, relation: r.subject_relation },
  };
  if (r.expires_at != null) t.expiresAt = Number(r.expires_at);
  return t;
}

export function rowToAttribute(r: AttributeRow): Attribute {
  const a: Attribute = {
    entity: { type: r.entity_type, id: r.entity_id },
    attribute: r.attribute,
    value: { type: r.value_type as AttributeValue["type"], data: JSON.parse(r.value) },
  };
  if (r.expires_at != null) a.expiresAt = Number(r.expires_at);
  return a;
}

/** A row's expiry as a row-set cell (text; "" = never, NULLIF'd back in SQL). */
export const expiresCell = (expiresAt: number | undefined): string =>
  expiresAt === undefined ? "" : String(expiresAt);

export const tupleCells = (t: Tuple): string[] => [
  t.entity.type,
  t.entity.id,
  t.relation,
  t.subject.type,
  t.subject.id,
  t.subject.relation,
];
