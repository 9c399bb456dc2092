/**
 * A write request as the list of statements of its one transaction. The first statement takes the next
 * transaction id (nextTxStatement); every later statement refers to it through currentTx, so the plan needs no
 * round trip between statements. Order: exact deletes, filter deletes, tuple inserts (idempotent), attribute upserts.
 */
import { aliasedTable, type Column, type SQL, sql } from "drizzle-orm";
import { type Attribute, attributeKey, tupleKey } from "../../model.ts";
import type { WriteRequest } from "../types.ts";
import { cells, type Dialect, list, name, P, type Statement, type Tables } from "./dialect.ts";
import {
  attributeColumns,
  attributeFilter,
  attributeKeyColumns,
  currentTx,
  type Filter,
  filterSql,
  TX_IDS_SEQUENCE,
  tupleColumns,
  tupleFilter,
} from "./fragments.ts";
import { expiresCell, tupleCells } from "./rows.ts";

/** The channel PostgreSQL writes notify on commit, with the payload `["<tenant id>", <snap>]`. */
export const WRITES_CHANNEL = "pemba_writes";

/**
 * Takes the next transaction id; the write's first statement, whose row is the write's snap.
 *
 * SQLite (one writer at a time): bumps the store-wide "tx" counter. PostgreSQL: takes the tenant's row lock while
 * setting its `head_tx` to the next id of the sequence, records the transaction, and queues the commit's
 * notification, all in ONE statement; no such tenant fails the statement (division by zero: failsWithoutRow), so the
 * write fails with ERROR_CODE_TENANT_NOT_FOUND and writes nothing, though its COMMIT went out with it. Writes of other tenants take other rows, so they run concurrently; writes of one tenant wait
 * for each other here, so their ids commit in id order and a snap is exact (every id of the tenant up to it is
 * committed). On a wait, READ COMMITTED re-evaluates the SET on the row's new version, taking a newer id.
 */
export function nextTxStatement(d: Dialect, tenantId: string, now: number): Statement<{ value: number }>[] {
  const { meta, tenants, transactions: tx } = d.tables;
  if (d.name === "pg") {
    const build = () =>
      sql`WITH t AS (UPDATE ${tenants} SET ${name(tenants.headTx)} = nextval('${sql.raw(TX_IDS_SEQUENCE)}')
          WHERE ${tenants.id} = ${P} RETURNING ${name(tenants.headTx)}),
        i AS (INSERT INTO ${tx} (${list([name(tx.id), name(tx.tenantId), name(tx.createdAt)])})
          SELECT ${sql.identifier("head_tx")}, ${P}, ${P} FROM t),
        v AS (SELECT max(${sql.identifier("head_tx")}) AS ${sql.identifier("head_tx")}, count(*) AS n FROM t)
        SELECT ${sql.identifier("head_tx")} AS ${sql.identifier("value")},
          pg_notify('${sql.raw(WRITES_CHANNEL)}', json_build_array(${P}::text, ${sql.identifier("head_tx")})::text)
        FROM v WHERE 1 / n = 1`;
    const s = d.statement<{ value: number }>("next_tx", build, [tenantId, tenantId, now, tenantId]);
    // no tenant row: 1 / 0 fails the statement (failsWithoutRow), so the transaction's COMMIT can go with it
    return [{ ...s, requireRow: "ERROR_CODE_TENANT_NOT_FOUND", failsWithoutRow: true }];
  }
  return [
    d.statement(
      "next_tx",
      () =>
        sql`UPDATE ${meta} SET ${name(meta.value)} = ${meta.value} + 1 WHERE ${meta.key} = 'tx' RETURNING ${name(meta.value)}`,
      [],
    ),
    d.statement(
      "insert_transaction",
      () =>
        sql`INSERT INTO ${tx} (${list([name(tx.id), name(tx.tenantId), name(tx.createdAt)])}) VALUES (${currentTx(d)}, ${P}, ${P})`,
      [tenantId, now],
    ),
  ];
}

/** `UPDATE table SET deleted_tx = <current> WHERE tenant_id = ? AND deleted_tx IS NULL` (live rows of the tenant). */
function markDeleted(d: Dialect, t: Tables["tuples"] | Tables["attributes"]): SQL {
  return sql`UPDATE ${t} SET ${name(t.deletedTx)} = ${currentTx(d)} WHERE ${t.tenantId} = ${P} AND ${t.deletedTx} IS NULL`;
}

/** Marks deleted the live rows whose key is one of `rows` (bound as one row set). */
function deleteByKey(
  d: Dialect,
  shape: string,
  t: Tables["tuples"] | Tables["attributes"],
  key: Column[],
  tenantId: string,
  rows: string[][],
): Statement {
  const width = key.length;
  const build = () =>
    sql`${markDeleted(d, t)} AND (${list(key)}) IN (SELECT ${list(cells(width))} FROM ${d.rows(width)} r)`;
  return d.statement(shape, build, [tenantId, ...d.rowsParams(rows, width)]);
}

/** Marks deleted the live rows that match a filter. */
function deleteByFilter<T extends Tables["tuples"] | Tables["attributes"], K extends string>(
  d: Dialect,
  shape: string,
  t: T,
  where: (t: T) => SQL,
  filter: Filter<K>,
  tenantId: string,
): Statement {
  return d.statement(`${shape} ${filter.shape}`, () => sql`${markDeleted(d, t)}${where(t)}`, [
    tenantId,
    ...filter.params,
  ]);
}

/** The expiry cell `i` of a row set (text, "" = never) as a BIGINT or NULL. */
const expiresFromCell = (i: number): SQL => sql`CAST(NULLIF(${cells(i + 1)[i]}, '') AS BIGINT)`;

/**
 * The tuple write's first statement: inserts the written tuples (row set c0..c5, expiry c6) that have no live row,
 * and marks deleted the live row of each one whose expiry differs (another one, or none), which the insert that
 * follows (insert_tuples) then writes with its new expiry; an expired row not yet swept too. Both find the live
 * rows through the live unique index, as the conflict arbiter: no plan can scan the tenant's rows. (The tenant's live
 * rows matched against the row set let PostgreSQL's planner, on stale statistics, scan every live row of the tenant
 * per write: 5 ms at 3,000 rows, and it grows with the tenant.)
 */
function upsertTuples(d: Dialect): SQL {
  const { tuples } = d.tables;
  const key = [tuples.tenantId, ...tupleColumns(tuples)].map(name);
  const differs = sql`COALESCE(${tuples.expiresAt}, -1) <> COALESCE(${sql.identifier("excluded")}.${name(tuples.expiresAt)}, -1)`;
  return sql`${insertTuples(d)} ON CONFLICT (${list(key)}) WHERE ${name(tuples.deletedTx)} IS NULL
    DO UPDATE SET ${name(tuples.deletedTx)} = ${currentTx(d)} WHERE ${differs}`;
}

/**
 * SQLite's second pass: writes again, with its new expiry, each tuple whose live row upsert_tuples marked deleted
 * (the old live row no longer conflicts; every other row of the set does, and is skipped). A row can have been
 * marked only when its old or its new expiry is set, so rows without a new expiry are left out up front when no row
 * of the tenant has an expiry (one probe of the partial expiry index, answered once per statement): such rows would
 * only conflict. A 1,000-row write without expiry then costs no second probe of the live unique index per row.
 * Binds the tenant, the rows, the tenant.
 */
function reinsertMarkedTuples(d: Dialect): SQL {
  const { tuples } = d.tables;
  const x = aliasedTable(tuples, "x");
  const anyExpiry = sql`EXISTS (SELECT 1 FROM ${tuples} ${x} WHERE ${x.tenantId} = ${P} AND ${x.expiresAt} IS NOT NULL)`;
  return sql`${insertTuples(d)} AND (${cells(7)[6]} <> '' OR ${anyExpiry}) ON CONFLICT DO NOTHING`;
}

/**
 * PostgreSQL: both passes in ONE statement. The row set is bound once (CTE `w`); `up` is upsert_tuples, whose
 * RETURNING names each key it inserted (deleted_tx NULL) or whose live row it marked deleted (deleted_tx set); the
 * outer INSERT writes the marked ones again with their new expiry. The old live row, deleted by this transaction,
 * no longer conflicts in the live unique index. The join runs only when `up` marked a row (an uncorrelated EXISTS:
 * PostgreSQL's one-time filter): a write that changes no expiry, the usual one, skips it. Without it the planner,
 * which cannot know how many rows `up` marks, sorted the whole row set for a merge join every time (3 ms of a
 * 1,000-row write). Binds the rows, then the tenant twice.
 */
function upsertTuplesOnce(d: Dialect): SQL {
  const { tuples } = d.tables;
  const keyColumns = tupleColumns(tuples);
  const key = [tuples.tenantId, ...keyColumns].map(name);
  const columns = [tuples.tenantId, ...keyColumns, tuples.createdTx, tuples.expiresAt].map(name);
  const [w, up, marked] = [sql.identifier("w"), sql.identifier("up"), sql.identifier("marked")];
  const cell = (i: number) => sql`${w}.${cells(i + 1)[i]}`;
  const expires = sql`CAST(NULLIF(${cell(6)}, '') AS BIGINT)`;
  const differs = sql`COALESCE(${tuples.expiresAt}, -1) <> COALESCE(${sql.identifier("excluded")}.${name(tuples.expiresAt)}, -1)`;
  const sameKey = sql.join(
    keyColumns.map((c, i) => sql`${cell(i)} = ${up}.${name(c)}`),
    sql` AND `,
  );
  const cellList = list(Array.from({ length: 6 }, (_, i) => cell(i)));
  return sql`WITH ${w} AS MATERIALIZED (SELECT * FROM ${d.rows(7)} r),
    ${up} AS (INSERT INTO ${tuples} (${list(columns)})
      SELECT ${P}, ${cellList}, ${currentTx(d)}, ${expires} FROM ${w}
      ON CONFLICT (${list(key)}) WHERE ${name(tuples.deletedTx)} IS NULL
      DO UPDATE SET ${name(tuples.deletedTx)} = ${currentTx(d)} WHERE ${differs}
      RETURNING ${list(keyColumns.map(name))}, ${name(tuples.deletedTx)})
    INSERT INTO ${tuples} (${list(columns)})
      SELECT ${P}, ${cellList}, ${currentTx(d)}, ${expires} FROM ${w} JOIN ${up} ON ${sameKey}
      WHERE ${up}.${name(tuples.deletedTx)} IS NOT NULL
        AND EXISTS (SELECT 1 FROM ${up} ${marked} WHERE ${marked}.${name(tuples.deletedTx)} IS NOT NULL)`;
}

/** `INSERT INTO tuples ... SELECT` the row set (c0..c5, expiry c6) at the current transaction; binds the tenant, rows. */
function insertTuples(d: Dialect): SQL {
  const { tuples } = d.tables;
  const columns = [tuples.tenantId, ...tupleColumns(tuples), tuples.createdTx, tuples.expiresAt].map(name);
  return sql`INSERT INTO ${tuples} (${list(columns)})
    SELECT ${P}, ${list(cells(6))}, ${currentTx(d)}, ${expiresFromCell(6)} FROM ${d.rows(7)} r WHERE true`;
}

export function planWrite(d: Dialect, tenantId: string, req: WriteRequest, now: number): Statement[] {
  const { tuples, attributes } = d.tables;
  const out: Statement[] = nextTxStatement(d, tenantId, now);

  if (req.expireUpTo !== undefined) {
    // the sweep: the (tenant_id, expires_at) index finds the expired live rows
    for (const [shape, t] of [
      ["expire_tuples", tuples],
      ["expire_attributes", attributes],
    ] as const) {
      const build = () => sql`${markDeleted(d, t)} AND ${t.expiresAt} <= ${P}`;
      out.push(d.statement(shape, build, [tenantId, req.expireUpTo]));
    }
  }
  if (req.deleteTuples?.length) {
    const rows = req.deleteTuples.map(tupleCells);
    out.push(deleteByKey(d, "delete_tuples", tuples, tupleColumns(tuples), tenantId, rows));
  }
  for (const f of req.deleteTupleFilters ?? []) {
    const filter = tupleFilter(d, f);
    out.push(
      deleteByFilter(d, "delete_tuples_where", tuples, (t) => filterSql(d, t, filter), filter, tenantId),
    );
  }
  if (req.deleteAttributes?.length) {
    const rows = req.deleteAttributes.map((a) => [a.entity.type, a.entity.id, a.attribute]);
    out.push(
      deleteByKey(d, "delete_attributes", attributes, attributeKeyColumns(attributes), tenantId, rows),
    );
  }
  for (const f of req.deleteAttributeFilters ?? []) {
    const filter = attributeFilter(d, f);
    out.push(
      deleteByFilter(
        d,
        "delete_attributes_where",
        attributes,
        (a) => filterSql(d, a, filter),
        filter,
        tenantId,
      ),
    );
  }
  if (req.tuples?.length) {
    const unique = [...new Map(req.tuples.map((t) => [tupleKey(t), t])).values()];
    const rows = unique.map((t) => [...tupleCells(t), expiresCell(t.expiresAt)]);
    if (d.name === "pg") {
      const params = [...d.rowsParams(rows, 7), tenantId, tenantId];
      out.push(d.statement("upsert_tuples_once", () => upsertTuplesOnce(d), params));
    } else {
      // SQLite has no data-modifying CTE: the passes are two statements over the same row set
      const params = [tenantId, ...d.rowsParams(rows, 7)];
      out.push(d.statement("upsert_tuples", () => upsertTuples(d), params));
      out.push(d.statement("insert_tuples", () => reinsertMarkedTuples(d), [...params, tenantId]));
    }
  }
  if (req.attributes?.length) {
    // the last value written for an attribute wins
    const latest = new Map<string, Attribute>();
    for (const a of req.attributes) {
      latest.delete(attributeKey(a));
      latest.set(attributeKey(a), a);
    }
    const rows = [...latest.values()].map((a) => [
      a.entity.type,
      a.entity.id,
      a.attribute,
      a.value.type,
      JSON.stringify(a.value.data),
      expiresCell(a.expiresAt),
    ]);
    out.push(
      deleteByKey(d, "replace_attributes", attributes, attributeKeyColumns(attributes), tenantId, rows),
    );
    const build = () => {
      const columns = [
        attributes.tenantId,
        ...attributeColumns(attributes),
        attributes.createdTx,
        attributes.expiresAt,
      ].map(name);
      return sql`INSERT INTO ${attributes} (${list(columns)})
        SELECT ${P}, ${list(cells(5))}, ${currentTx(d)}, ${expiresFromCell(5)} FROM ${d.rows(6)} r WHERE true`;
    };
    out.push(d.statement("insert_attributes", build, [tenantId, ...d.rowsParams(rows, 6)]));
  }
  return out;
}
