/** SQL pieces shared by reads and writes: column lists, the counters, visibility at a snap, the filters. */
import { type Column, type SQL, sql } from "drizzle-orm";
import type { AttributeFilter, TupleFilter } from "../../model.ts";
import { type Dialect, P, type Tables } from "./dialect.ts";

/** A tuple's key: every column but the tenant and the history. */
export const tupleColumns = (t: Tables["tuples"]): Column[] => [
  t.entityType,
  t.entityId,
  t.relation,
  t.subjectType,
  t.subjectId,
  t.subjectRelation,
];
/** An attribute's key; its value follows it (attributeColumns). */
export const attributeKeyColumns = (a: Tables["attributes"]): Column[] => [
  a.entityType,
  a.entityId,
  a.attribute,
];
export const attributeColumns = (a: Tables["attributes"]): Column[] => [
  ...attributeKeyColumns(a),
  a.valueType,
  a.value,
];

/** Reads a store-wide counter: "tx" (the last transaction id) or "gc_horizon" (snaps below it are expired). */
export function counter(d: Dialect, key: "tx" | "gc_horizon"): SQL {
  const { meta } = d.tables;
  return sql`SELECT ${meta.value} FROM ${meta} WHERE ${meta.key} = ${sql.raw(`'${key}'`)}`;
}

/** PostgreSQL's sequence of transaction ids (pg-tables.ts `txIds`). */
export const TX_IDS_SEQUENCE = "pemba_tx_ids";

/**
 * The current transaction id inside a write transaction, taken by its first statement: SQLite bumps the store-wide
 * "tx" counter (one writer at a time); PostgreSQL takes the next id of its sequence (nextTxStatement).
 */
export const currentTx = (d: Dialect): SQL =>
  d.name === "pg" ? sql.raw(`currval('${TX_IDS_SEQUENCE}')`) : sql`(${counter(d, "tx")})`;

/**
 * The newest snap a tenant's reads can use. SQLite: the store-wide "tx" counter (writes commit one at a time, in id
 * order). PostgreSQL: the tenant's last committed write (`tenants.head_tx`; writes of one tenant take their ids
 * under its row lock, so they commit in id order), or the GC horizon when that is newer. Binds `headParams`.
 */
export function tenantHead(d: Dialect): SQL {
  if (d.name !== "pg") return currentTx(d);
  const { tenants } = d.tables;
  return sql`GREATEST((SELECT ${tenants.headTx} FROM ${tenants} WHERE ${tenants.id} = ${P}), ${gcHorizon(d)})`;
}

/** The parameters `tenantHead` binds. */
export const headParams = (d: Dialect, tenantId: string): unknown[] => (d.name === "pg" ? [tenantId] : []);

/** The GC horizon: snaps below it are expired and history at or before it is gone. */
export const gcHorizon = (d: Dialect): SQL => sql`(${counter(d, "gc_horizon")})`;

/**
 * Rows of `t` visible at a snap and not expired at an evaluation time, bound `snap, snap, at` (visibleParams). The
 * unary `+` keeps SQLite's planner (no statistics) from picking the created_tx index over the lookup indexes; it
 * changes nothing for PostgreSQL.
 */
export const visibleAt = (t: Tables["tuples"] | Tables["attributes"]): SQL =>
  sql`+${t.createdTx} <= ${P} AND (${t.deletedTx} IS NULL OR ${t.deletedTx} > ${P}) AND ${notExpired(t)}`;

/** The parameters of `visibleAt`. */
export const visibleParams = (snap: number, at: number): number[] => [snap, snap, at];

/** Rows of `t` not expired at an evaluation time (one parameter: `at`, ms). */
export const notExpired = (t: Tables["tuples"] | Tables["attributes"]): SQL =>
  sql`(${t.expiresAt} IS NULL OR ${t.expiresAt} > ${P})`;

/** A filter's conditions (empty strings and lists match anything): `shape` names which, `params` binds them. */
export interface Filter<K extends string> {
  readonly shape: string;
  readonly conditions: { column: K; list: boolean }[];
  readonly params: unknown[];
}

type TupleColumn = "entityType" | "entityId" | "relation" | "subjectType" | "subjectId" | "subjectRelation";
type AttributeColumn = "entityType" | "entityId" | "attribute";

function filterOf<K extends string>(d: Dialect, parts: [K, string | string[] | undefined][]): Filter<K> {
  const conditions: { column: K; list: boolean }[] = [];
  const params: unknown[] = [];
  for (const [column, value] of parts) {
    if (Array.isArray(value)) {
      if (value.length === 0) continue;
      conditions.push({ column, list: true });
      params.push(d.listParam(value));
    } else if (value) {
      conditions.push({ column, list: false });
      params.push(value);
    }
  }
  return {
    shape: conditions.map((c) => (c.list ? `${c.column}[]` : c.column)).join(","),
    conditions,
    params,
  };
}

export const tupleFilter = (d: Dialect, f: TupleFilter): Filter<TupleColumn> =>
  filterOf<TupleColumn>(d, [
    ["entityType", f.entity?.type],
    ["entityId", f.entity?.ids],
    ["relation", f.relation],
    ["subjectType", f.subject?.type],
    ["subjectId", f.subject?.ids],
    ["subjectRelation", f.subject?.relation],
  ]);

export const attributeFilter = (d: Dialect, f: AttributeFilter): Filter<AttributeColumn> =>
  filterOf<AttributeColumn>(d, [
    ["entityType", f.entity?.type],
    ["entityId", f.entity?.ids],
    ["attribute", f.attributes],
  ]);

/** `AND ...` for each of the filter's conditions on the columns of `t`. */
export function filterSql<K extends string>(d: Dialect, t: Record<K, Column>, f: Filter<K>): SQL {
  return sql.join(
    f.conditions.map((c) => (c.list ? sql` AND ${d.inList(t[c.column])}` : sql` AND ${t[c.column]} = ${P}`)),
  );
}
