/** The read statements: each engine read batch is ONE statement joining the bound query rows to the table. */
import { aliasedTable, type Column, type SQL, sql } from "drizzle-orm";
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../model.ts";
import type { AttributeQuery, ChangeSet, DataChange, SubjectTupleQuery, TupleQuery } from "../types.ts";
import { type Dialect, type KeyList, list, name, P, type Statement, type Tables } from "./dialect.ts";
import {
  attributeColumns,
  attributeFilter,
  type Filter,
  filterSql,
  gcHorizon,
  notExpired,
  tupleColumns,
  tupleFilter,
  visibleAt,
  visibleParams,
} from "./fragments.ts";
import { type AttributeRow, rowToAttribute, rowToTuple, type TupleRow } from "./rows.ts";
import { INDEXES } from "./sqlite-tables.ts";

type TuplesAlias = Tables["tuples"];
type AttributesAlias = Tables["attributes"];

/** One row shape for both tables (`is_attribute` tells them apart), for the combined level read. */
export type ReadRow = (TupleRow & { is_attribute: 0 }) | (AttributeRow & { is_attribute: 1 });
/** A row of a paged read: the row id is the cursor. */
type Paged<R> = R & { id: number };
/** A changed row of either table, `kind` 't' (tuple) or 'a' (attribute). */
export type ChangedRow = { id: number; created_tx: number; deleted_tx: number | null } & (
  | (TupleRow & { kind: "t" })
  | (AttributeRow & { kind: "a" })
);

const nullText = sql`CAST(NULL AS TEXT)`;

type Select<T> = (d: Dialect, t: T) => SQL;
/** The engine reads return each row's expiresAt (the replica files rows read at `at` = 0 and filters them itself). */
const tupleSelect: Select<TuplesAlias> = (_d, t) => sql`${list(tupleColumns(t))}, ${t.expiresAt}`;
const attributeSelect: Select<AttributesAlias> = (_d, t) => sql`${list(attributeColumns(t))}, ${t.expiresAt}`;
const tupleAsRead: Select<TuplesAlias> = (d, t) => {
  const a = d.tables.attributes;
  return sql`0 AS is_attribute, ${list(tupleColumns(t))}, ${list([a.attribute, a.valueType, a.value].map((c) => sql`${nullText} AS ${name(c)}`))}, ${t.expiresAt}`;
};
const attributeAsRead: Select<AttributesAlias> = (d, t) => {
  const u = d.tables.tuples;
  const nulls = [u.relation, u.subjectType, u.subjectId, u.subjectRelation].map(
    (c) => sql`${nullText} AS ${name(c)}`,
  );
  return sql`1 AS is_attribute, ${t.entityType}, ${t.entityId}, ${list(nulls)}, ${t.attribute}, ${t.valueType}, ${t.value}, ${t.expiresAt}`;
};

function entityKeys(queries: TupleQuery[]): string[][] {
  const keys: string[][] = [];
  for (const q of queries) {
    for (const id of q.entityIds) for (const r of q.relations) keys.push([q.entityType, id, r]);
  }
  return keys;
}

function tuplesByEntity(d: Dialect, keys: KeyList, select: Select<TuplesAlias>): SQL {
  const t = aliasedTable(d.tables.tuples, "t");
  return sql`SELECT ${select(d, t)} FROM ${d.from(d.tables.tuples, t, INDEXES.tuplesEntity)}
    WHERE ${t.tenantId} = ${P} AND ${d.keyIn([t.entityType, t.entityId, t.relation], keys)} AND ${visibleAt(t)}`;
}

export function queryTuplesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  queries: TupleQuery[],
  at: number,
): Statement<TupleRow> {
  const keys = d.keyList(entityKeys(queries), 3);
  return d.statement(`query_tuples ${keys.shape}`, () => tuplesByEntity(d, keys, tupleSelect), [
    tenantId,
    ...keys.params,
    ...visibleParams(snap, at),
  ]);
}

export function querySubjectTuplesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  queries: SubjectTupleQuery[],
  at: number,
): Statement<TupleRow> {
  const rows: string[][] = [];
  for (const q of queries) {
    for (const id of q.subjectIds) {
      for (const r of q.relations) rows.push([q.subjectType, id, q.subjectRelation, q.entityType, r]);
    }
  }
  const keys = d.keyList(rows, 5);
  const build = () => {
    const t = aliasedTable(d.tables.tuples, "t");
    const match = d.keyIn([t.subjectType, t.subjectId, t.subjectRelation, t.entityType, t.relation], keys);
    return sql`SELECT ${tupleSelect(d, t)} FROM ${d.from(d.tables.tuples, t, INDEXES.tuplesSubject)}
      WHERE ${t.tenantId} = ${P} AND ${match} AND ${visibleAt(t)}`;
  };
  return d.statement(`query_subject_tuples ${keys.shape}`, build, [
    tenantId,
    ...keys.params,
    ...visibleParams(snap, at),
  ]);
}

/** Attribute reads by entity id, and by type (every entity of the type) for queries without ids. */
interface AttributeKeys {
  byId?: KeyList;
  byType?: KeyList;
  shape: string;
}

function attributeKeys(d: Dialect, queries: AttributeQuery[]): AttributeKeys {
  const byId: string[][] = [];
  const byType: string[][] = [];
  for (const q of queries) {
    for (const a of q.attributes) {
      if (q.entityIds) for (const id of q.entityIds) byId.push([q.entityType, id, a]);
      else byType.push([q.entityType, a]);
    }
  }
  const id = byId.length > 0 || byType.length === 0 ? d.keyList(byId, 3) : undefined;
  const type = byType.length > 0 ? d.keyList(byType, 2) : undefined;
  return { byId: id, byType: type, shape: `${id?.shape ?? "-"} ${type?.shape ?? "-"}` };
}

function attributeParams(tenantId: string, snap: number, at: number, k: AttributeKeys): unknown[] {
  const params: unknown[] = [];
  for (const keys of [k.byId, k.byType])
    if (keys) params.push(tenantId, ...keys.params, ...visibleParams(snap, at));
  return params;
}

function attributesByEntity(d: Dialect, k: AttributeKeys, select: Select<AttributesAlias>): SQL {
  const t = aliasedTable(d.tables.attributes, "t");
  const part = (keys: KeyList, columns: Column[]) =>
    sql`SELECT ${select(d, t)} FROM ${d.from(d.tables.attributes, t, INDEXES.attributesEntity)}
      WHERE ${t.tenantId} = ${P} AND ${d.keyIn(columns, keys)} AND ${visibleAt(t)}`;
  const parts: SQL[] = [];
  if (k.byId) parts.push(part(k.byId, [t.entityType, t.entityId, t.attribute]));
  if (k.byType) parts.push(part(k.byType, [t.entityType, t.attribute]));
  return sql.join(parts, sql` UNION ALL `);
}

export function queryAttributesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  queries: AttributeQuery[],
  at: number,
): Statement<AttributeRow> {
  const k = attributeKeys(d, queries);
  return d.statement(
    `query_attributes ${k.shape}`,
    () => attributesByEntity(d, k, attributeSelect),
    attributeParams(tenantId, snap, at, k),
  );
}

/** queryTuples and queryAttributes of one walk level as ONE statement; rows split by `splitReads`. */
export function queryReadsStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  tuples: TupleQuery[],
  attributes: AttributeQuery[],
  at: number,
): Statement<ReadRow> {
  const keys = d.keyList(entityKeys(tuples), 3);
  const k = attributeKeys(d, attributes);
  const build = () =>
    sql`${tuplesByEntity(d, keys, tupleAsRead)} UNION ALL ${attributesByEntity(d, k, attributeAsRead)}`;
  return d.statement(`query_reads ${keys.shape} ${k.shape}`, build, [
    tenantId,
    ...keys.params,
    ...visibleParams(snap, at),
    ...attributeParams(tenantId, snap, at, k),
  ]);
}

export function splitReads(rows: ReadRow[]): [Tuple[], Attribute[]] {
  const tuples: Tuple[] = [];
  const attributes: Attribute[] = [];
  for (const r of rows) {
    if (r.is_attribute === 1) attributes.push(rowToAttribute(r));
    else tuples.push(rowToTuple(r));
  }
  return [tuples, attributes];
}

export function listObjectIdsStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  type: string,
  at: number,
): Statement<{ id: string }> {
  const build = () => {
    const tuples = aliasedTable(d.tables.tuples, "t");
    const attributes = aliasedTable(d.tables.attributes, "t");
    const part = (t: TuplesAlias | AttributesAlias, from: SQL, id: Column, idType: Column) =>
      sql`SELECT ${id} AS id FROM ${from} WHERE ${t.tenantId} = ${P} AND ${idType} = ${P} AND ${visibleAt(t)}`;
    const fromTuples = (index: string) => d.from(d.tables.tuples, tuples, index);
    return sql.join(
      [
        part(tuples, fromTuples(INDEXES.tuplesEntity), tuples.entityId, tuples.entityType),
        part(tuples, fromTuples(INDEXES.tuplesSubject), tuples.subjectId, tuples.subjectType),
        part(
          attributes,
          d.from(d.tables.attributes, attributes, INDEXES.attributesEntity),
          attributes.entityId,
          attributes.entityType,
        ),
      ],
      sql` UNION `,
    );
  };
  const params = [tenantId, type, ...visibleParams(snap, at)];
  return d.statement("list_object_ids", build, [...params, ...params, ...params]);
}

/**
 * The index a filtered page reads by, pinned for SQLite (whose planner, without statistics, walks the tenant's
 * (tenant_id, deleted_tx) index and filters every live row): entity ids -> the entity index, else subject ids -> the
 * subject index; no ids -> none (the id-ordered walk below). PostgreSQL chooses for itself: there a subject page is
 * one range of its subject page index (tenant, subject type, subject id, id). SQLite has no such index (migration
 * 0006 dropped it: a 1,000-row write naming 1,000 subjects would pay a second scattered index); it
 * reads the subject's rows by the subject index and sorts them by id under the page's LIMIT, so a subject page costs
 * in proportion to the subject's rows, not the tenant's.
 */
function pageIndex(tuples: boolean, filter: Filter<string>): string | undefined {
  const has = (column: string) => filter.conditions.some((c) => c.column === column);
  if (!tuples) return has("entityType") && has("entityId") ? INDEXES.attributesEntity : undefined;
  if (has("entityType") && has("entityId")) return INDEXES.tuplesEntity;
  if (has("subjectType") && has("subjectId")) return INDEXES.tuplesSubject;
  return undefined;
}

/**
 * A page of rows visible at `snap` with id > `afterId`, in id order. Written as two limited halves: the rows still
 * live, in id order (SQLite walks the (tenant_id, deleted_tx) index's NULL range, which is in id order), and the
 * rows deleted after `snap`, read by the deleted rows' index and sorted (as many as the deletes since `snap`, which
 * GC bounds). `deleted_tx IS NULL OR deleted_tx > ?` in one WHERE makes SQLite sort every remaining row of the
 * tenant for each page (quadratic over a paged full read).
 */
function pagedVisible<K extends string, T extends (TuplesAlias | AttributesAlias) & Record<K, Column>, R>(
  d: Dialect,
  kind: string,
  table: T,
  columns: (t: T) => Column[],
  filter: Filter<K>,
  tenantId: string,
  snap: number,
  at: number,
  afterId: number,
  limit: number,
): Statement<Paged<R>> {
  const build = () => {
    const t = aliasedTable(table, "t");
    const from = index === undefined ? sql`${table} ${t}` : d.from(table, t, index);
    const half = (deleted: SQL, id: SQL) =>
      sql`SELECT * FROM (SELECT ${t.id}, ${list(columns(t))}, ${t.expiresAt} FROM ${from}
        WHERE ${t.tenantId} = ${P} AND ${deleted} AND ${id} > ${P} AND +${t.createdTx} <= ${P} AND ${notExpired(t)}${filterSql(d, t, filter)}
        ORDER BY ${id} LIMIT ${P}) h`;
    // the deleted half compares and sorts `+id`, which no index serves: PostgreSQL's generic plan would otherwise walk
    // the primary key from the cursor through every row of the table (at a head snap no row matches, so the LIMIT
    // never stops it), where the deleted rows' index finds the few rows deleted after `snap`
    const live = half(sql`${t.deletedTx} IS NULL`, sql`${t.id}`);
    const gone = half(sql`${t.deletedTx} > ${P}`, sql`+${t.id}`);
    return sql`SELECT * FROM (${live} UNION ALL ${gone}) u ORDER BY ${name(table.id)} LIMIT ${P}`;
  };
  const index = pageIndex(table === d.tables.tuples, filter);
  const live = [tenantId, afterId, snap, at, ...filter.params, limit];
  const gone = [tenantId, snap, afterId, snap, at, ...filter.params, limit];
  return d.statement(`${kind} ${filter.shape}`, build, [...live, ...gone, limit]);
}

/** How many rows of `table` a filtered read at (snap, at) returns (RowCounts): one COUNT, no rows sent. */
function countVisible<K extends string, T extends (TuplesAlias | AttributesAlias) & Record<K, Column>>(
  d: Dialect,
  kind: string,
  table: T,
  filter: Filter<K>,
  tenantId: string,
  snap: number,
  at: number,
): Statement<{ n: number }> {
  const has = (column: string) => filter.conditions.some((c) => c.column === column);
  const tuples = table === d.tables.tuples;
  // the index whose leading columns the filter fixes (SQLite pins it: without statistics it may walk the tenant)
  const index = !has("entityType")
    ? has("subjectType") && tuples
      ? INDEXES.tuplesSubject
      : undefined
    : tuples
      ? INDEXES.tuplesEntity
      : INDEXES.attributesEntity;
  const build = () => {
    const t = aliasedTable(table, "t");
    const from = index === undefined ? sql`${table} ${t}` : d.from(table, t, index);
    return sql`SELECT COUNT(*) AS n FROM ${from} WHERE ${t.tenantId} = ${P}${filterSql(d, t, filter)} AND ${visibleAt(t)}`;
  };
  return d.statement(`${kind} ${filter.shape}`, build, [
    tenantId,
    ...filter.params,
    ...visibleParams(snap, at),
  ]);
}

export function countTuplesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  at: number,
  filter: TupleFilter,
): Statement<{ n: number }> {
  return countVisible(d, "count_tuples", d.tables.tuples, tupleFilter(d, filter), tenantId, snap, at);
}

export function countAttributesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  at: number,
  filter: AttributeFilter,
): Statement<{ n: number }> {
  return countVisible(
    d,
    "count_attributes",
    d.tables.attributes,
    attributeFilter(d, filter),
    tenantId,
    snap,
    at,
  );
}

export function readTuplesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  at: number,
  filter: TupleFilter,
  afterId: number,
  limit: number,
): Statement<Paged<TupleRow>> {
  const f = tupleFilter(d, filter);
  return pagedVisible(d, "read_tuples", d.tables.tuples, tupleColumns, f, tenantId, snap, at, afterId, limit);
}

export function readAttributesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  at: number,
  filter: AttributeFilter,
  afterId: number,
  limit: number,
): Statement<Paged<AttributeRow>> {
  const f = attributeFilter(d, filter);
  return pagedVisible(
    d,
    "read_attributes",
    d.tables.attributes,
    attributeColumns,
    f,
    tenantId,
    snap,
    at,
    afterId,
    limit,
  );
}

/** The earliest expiresAt of the tenant's live tuples and attributes (NULL when none expires). */
export function nextExpiryStatement(d: Dialect, tenantId: string): Statement<{ next: number | null }> {
  const build = () => {
    const { tuples, attributes } = d.tables;
    const part = (t: TuplesAlias | AttributesAlias) =>
      sql`SELECT MIN(${t.expiresAt}) AS x FROM ${t} WHERE ${t.tenantId} = ${P} AND ${t.expiresAt} IS NOT NULL AND ${t.deletedTx} IS NULL`;
    return sql`SELECT MIN(x) AS next FROM (${part(tuples)} UNION ALL ${part(attributes)}) u`;
  };
  return d.statement("next_expiry", build, [tenantId, tenantId]);
}

/**
 * The ids of the first `limit` transactions after `after` that changed data of the tenant; history at or before
 * the gc horizon is gone, so those transactions are never reported.
 */
export function changedTxStatement(
  d: Dialect,
  tenantId: string,
  after: number,
  limit: number,
): Statement<{ tx: number }> {
  const build = () => {
    const { tuples, attributes } = d.tables;
    const part = (t: TuplesAlias | AttributesAlias, column: Column) =>
      sql`SELECT ${column} AS tx FROM ${t} WHERE ${t.tenantId} = ${P} AND ${column} > ${P} AND ${column} > ${gcHorizon(d)}`;
    const parts = [
      part(tuples, tuples.createdTx),
      part(tuples, tuples.deletedTx),
      part(attributes, attributes.createdTx),
      part(attributes, attributes.deletedTx),
    ];
    return sql`SELECT tx FROM (${sql.join(parts, sql` UNION `)}) u ORDER BY tx LIMIT ${P}`;
  };
  return d.statement("changed_tx", build, [
    tenantId,
    after,
    tenantId,
    after,
    tenantId,
    after,
    tenantId,
    after,
    limit,
  ]);
}

/** Rows created or deleted by transactions in [from, to], with `kind` 't' (tuple) or 'a' (attribute). */
export function changedRowsStatement(
  d: Dialect,
  tenantId: string,
  from: number,
  to: number,
): Statement<ChangedRow> {
  return d.statement("changed_rows", () => changedRows(d), changedRowsParams(tenantId, from, to));
}

/**
 * changed_rows with the GC horizon as `horizon` on every row, both read in ONE snapshot (a GC that commits before it
 * shows in both, one after it in neither); no changed row gives one row of NULLs and the horizon.
 */
export function changedRowsAndHorizonStatement(
  d: Dialect,
  tenantId: string,
  from: number,
  to: number,
): Statement<Partial<ChangedRow> & { horizon: number }> {
  const build = () =>
    sql`SELECT h.horizon, c.* FROM (SELECT ${gcHorizon(d)} AS horizon) h LEFT JOIN (${changedRows(d)}) c ON true ORDER BY c.${sql.identifier("id")}`;
  return d.statement("changed_rows_and_horizon", build, changedRowsParams(tenantId, from, to));
}

function changedRowsParams(tenantId: string, from: number, to: number): unknown[] {
  const params = [tenantId, from, to, from, to];
  return [...params, ...params];
}

/** The changed_rows query (binds changedRowsParams). */
function changedRows(d: Dialect): SQL {
  const { tuples: u, attributes: a } = d.tables;
  const nulls = (columns: Column[]) => columns.map((c) => sql`NULL AS ${name(c)}`);
  const part = (t: TuplesAlias | AttributesAlias, kind: SQL, columns: SQL) =>
    sql`SELECT ${kind} AS kind, ${t.id}, ${t.createdTx}, ${t.deletedTx}, ${t.expiresAt}, ${columns} FROM ${t}
        WHERE ${t.tenantId} = ${P} AND ((${t.createdTx} >= ${P} AND ${t.createdTx} <= ${P}) OR (${t.deletedTx} >= ${P} AND ${t.deletedTx} <= ${P}))`;
  const tupleCells = list([...tupleColumns(u), ...nulls([a.attribute, a.valueType, a.value])]);
  const attributeCells = list([
    a.entityType,
    a.entityId,
    ...nulls([u.relation, u.subjectType, u.subjectId, u.subjectRelation]),
    a.attribute,
    a.valueType,
    a.value,
  ]);
  return sql`${part(u, sql`'t'`, tupleCells)} UNION ALL ${part(a, sql`'a'`, attributeCells)} ORDER BY ${name(u.id)}`;
}

/** The ids of the transactions that created or deleted `rows`, after `after`, ascending. */
export function changedTxs(rows: readonly ChangedRow[], after: number): number[] {
  const txs = new Set<number>();
  for (const r of rows) {
    for (const tx of [r.created_tx, r.deleted_tx]) if (tx != null && Number(tx) > after) txs.add(Number(tx));
  }
  return [...txs].sort((a, b) => a - b);
}

/** Groups changed rows into change sets: per transaction, tuple deletes, attribute deletes, then creates. */
export function buildChangeSets(txs: number[], rows: ChangedRow[]): ChangeSet[] {
  const sets = new Map<
    number,
    { del: DataChange[]; delA: DataChange[]; add: DataChange[]; addA: DataChange[] }
  >();
  for (const tx of txs) sets.set(tx, { del: [], delA: [], add: [], addA: [] });
  for (const r of rows) {
    const deleted = r.deleted_tx == null ? undefined : sets.get(Number(r.deleted_tx));
    const created = sets.get(Number(r.created_tx));
    if (deleted) {
      if (r.kind === "t") deleted.del.push({ operation: "OPERATION_DELETE", tuple: rowToTuple(r) });
      else deleted.delA.push({ operation: "OPERATION_DELETE", attribute: rowToAttribute(r) });
    }
    if (created) {
      if (r.kind === "t") created.add.push({ operation: "OPERATION_CREATE", tuple: rowToTuple(r) });
      else created.addA.push({ operation: "OPERATION_CREATE", attribute: rowToAttribute(r) });
    }
  }
  return txs.map((tx) => {
    const s = sets.get(tx) as {
      del: DataChange[];
      delA: DataChange[];
      add: DataChange[];
      addA: DataChange[];
    };
    return { snap: tx, changes: [...s.del, ...s.delA, ...s.add, ...s.addA] };
  });
}
