/** The statements for all but the data: tenants, schemas, bundles, the snap counters, GC. */
import { getTableName, sql } from "drizzle-orm";
import { type Dialect, list, name, P, type Statement } from "./dialect.ts";
import { counter, gcHorizon, headParams, tenantHead } from "./fragments.ts";
import type { DbRow, SchemaRow, TenantRow } from "./rows.ts";
import type { bundles } from "./sqlite-tables.ts";

const tenantColumns = (d: Dialect) => {
  const { tenants } = d.tables;
  return list([tenants.id, tenants.name, tenants.createdAt].map(name));
};

// tenants

export function createTenantStatement(
  d: Dialect,
  id: string,
  tenantName: string,
  now: number,
): Statement<TenantRow> {
  const { tenants } = d.tables;
  const build = () =>
    sql`INSERT INTO ${tenants} (${tenantColumns(d)}) VALUES (${P}, ${P}, ${P}) ON CONFLICT DO NOTHING RETURNING ${tenantColumns(d)}`;
  return d.statement("create_tenant", build, [id, tenantName, now]);
}

export function getTenantStatement(d: Dialect, id: string): Statement<TenantRow> {
  const { tenants } = d.tables;
  return d.statement(
    "get_tenant",
    () => sql`SELECT ${tenantColumns(d)} FROM ${tenants} WHERE ${tenants.id} = ${P}`,
    [id],
  );
}

/** Whether the tenant exists: the check a write transaction runs first. */
export function tenantExistsStatement(d: Dialect, id: string): Statement<{ found: number }> {
  const { tenants } = d.tables;
  return d.statement(
    "tenant_exists",
    () => sql`SELECT 1 AS found FROM ${tenants} WHERE ${tenants.id} = ${P}`,
    [id],
  );
}

/** Deletes the tenant's rows of every table, then the tenant (the last statement returns it). */
export function deleteTenantStatements(d: Dialect, id: string): Statement[] {
  const { tuples, attributes, schemas, bundles, transactions, tenants } = d.tables;
  const rows = [tuples, attributes, schemas, bundles, transactions].map((t) =>
    d.statement(
      `delete_tenant_rows ${getTableName(t)}`,
      () => sql`DELETE FROM ${t} WHERE ${t.tenantId} = ${P}`,
      [id],
    ),
  );
  const tenant = d.statement<TenantRow>(
    "delete_tenant",
    () => sql`DELETE FROM ${tenants} WHERE ${tenants.id} = ${P} RETURNING ${tenantColumns(d)}`,
    [id],
  );
  return [...rows, tenant];
}

export function listTenantsStatement(d: Dialect, after: string, limit: number): Statement<TenantRow> {
  const { tenants } = d.tables;
  // byte order on both dialects: PostgreSQL's key columns are COLLATE "C" (pg-tables.ts)
  const build = () =>
    sql`SELECT ${tenantColumns(d)} FROM ${tenants} WHERE ${tenants.id} > ${P} ORDER BY ${tenants.id} LIMIT ${P}`;
  return d.statement("list_tenants", build, [after, limit]);
}

// schemas

export function writeSchemaStatements(
  d: Dialect,
  tenantId: string,
  version: string,
  schema: string,
  now: number,
): Statement[] {
  const { schemas: s } = d.tables;
  return [
    d.statement(
      "delete_schema",
      () => sql`DELETE FROM ${s} WHERE ${s.tenantId} = ${P} AND ${s.version} = ${P}`,
      [tenantId, version],
    ),
    d.statement(
      "insert_schema",
      () =>
        sql`INSERT INTO ${s} (${list([s.tenantId, s.version, s.schema, s.createdAt].map(name))}) VALUES (${P}, ${P}, ${P}, ${P})`,
      [tenantId, version, schema, now],
    ),
  ];
}

export function readSchemaStatement(d: Dialect, tenantId: string, version: string): Statement<SchemaRow> {
  const { schemas: s } = d.tables;
  const build = () =>
    sql`SELECT ${list([s.version, s.schema, s.createdAt])} FROM ${s} WHERE ${s.tenantId} = ${P} AND ${s.version} = ${P}`;
  return d.statement("read_schema", build, [tenantId, version]);
}

/**
 * Deletes the tenant only while it holds nothing (no tuple, attribute, schema or bundle row, deleted ones not yet
 * collected included), then its transaction history if the tenant went: ONE transaction, so a write that raced it
 * either lands first (nothing is deleted) or fails on the missing tenant. The first statement returns the tenant
 * it deleted.
 */
export function deleteEmptyTenantStatements(d: Dialect, id: string): Statement[] {
  const { tuples, attributes, schemas, bundles, transactions, tenants } = d.tables;
  const holds = [tuples, attributes, schemas, bundles].map(
    (t) => sql`NOT EXISTS (SELECT 1 FROM ${t} WHERE ${t.tenantId} = ${P})`,
  );
  const tenant = d.statement<TenantRow>(
    "delete_empty_tenant",
    () =>
      sql`DELETE FROM ${tenants} WHERE ${tenants.id} = ${P} AND ${sql.join(holds, sql` AND `)} RETURNING ${tenantColumns(d)}`,
    [id, id, id, id, id],
  );
  const history = d.statement(
    "delete_empty_tenant transactions",
    () =>
      sql`DELETE FROM ${transactions} WHERE ${transactions.tenantId} = ${P} AND NOT EXISTS (SELECT 1 FROM ${tenants} WHERE ${tenants.id} = ${P})`,
    [id, id],
  );
  return [tenant, history];
}

/** The head schema and the head snap from the same statement: one snapshot of the database for both. */
export function headSchemaStatement(
  d: Dialect,
  tenantId: string,
): Statement<SchemaRow & { read_at: number }> {
  const { schemas: s } = d.tables;
  const build = () =>
    sql`SELECT ${list([s.version, s.schema, s.createdAt])}, ${tenantHead(d)} AS read_at
      FROM ${s} WHERE ${s.tenantId} = ${P} ORDER BY ${s.seq} DESC LIMIT 1`;
  return d.statement("head_schema", build, [...headParams(d, tenantId), tenantId]);
}

export function listSchemasStatement(
  d: Dialect,
  tenantId: string,
  before: number,
  limit: number,
): Statement<SchemaRow & { seq: number }> {
  const { schemas: s } = d.tables;
  const build = () =>
    sql`SELECT ${list([s.seq, s.version, s.schema, s.createdAt])} FROM ${s}
      WHERE ${s.tenantId} = ${P} AND ${s.seq} < ${P} ORDER BY ${s.seq} DESC LIMIT ${P}`;
  return d.statement("list_schemas", build, [tenantId, before, limit]);
}

// snaps

/** The tenant's head snap (tenantHead). */
export const headSnapStatement = (d: Dialect, tenantId: string): Statement<{ value: number }> =>
  d.statement(
    "head_snap",
    () => sql`SELECT ${tenantHead(d)} AS ${sql.identifier("value")}`,
    headParams(d, tenantId),
  );

/** Every tenant's head snap (tenantHead) in one statement: the replica's timer round. */
export function tenantHeadsStatement(d: Dialect): Statement<{ id: string; head: number }> {
  const { tenants } = d.tables;
  const build = () =>
    d.name === "pg"
      ? sql`SELECT ${tenants.id}, GREATEST(${tenants.headTx}, ${gcHorizon(d)}) AS head FROM ${tenants}`
      : sql`SELECT ${tenants.id}, ${tenantHead(d)} AS head FROM ${tenants}`;
  return d.statement("tenant_heads", build, []);
}

/** The GC horizon: reads at snaps below it are expired. */
export const gcHorizonStatement = (d: Dialect): Statement<{ value: number }> =>
  d.statement("gc_horizon", () => counter(d, "gc_horizon"), []);

/** The head snap, the GC horizon, the tenant's created_at and its head schema version in ONE statement. */
export function freshnessStatement(
  d: Dialect,
  tenantId: string,
): Statement<{ head: number; horizon: number; created_at: number | null; schema_version: string | null }> {
  const { tenants, schemas: s } = d.tables;
  const build = () =>
    sql`SELECT ${tenantHead(d)} AS head, ${gcHorizon(d)} AS horizon,
      (SELECT ${tenants.createdAt} FROM ${tenants} WHERE ${tenants.id} = ${P}) AS created_at,
      (SELECT ${s.version} FROM ${s} WHERE ${s.tenantId} = ${P} ORDER BY ${s.seq} DESC LIMIT 1) AS schema_version`;
  return d.statement("freshness", build, [...headParams(d, tenantId), tenantId, tenantId]);
}

// bundles

export function writeBundleStatement(
  d: Dialect,
  tenantId: string,
  bundleName: string,
  payload: string,
): Statement {
  const { bundles: b } = d.tables;
  const build = () =>
    sql`INSERT INTO ${b} (${list([b.tenantId, b.name, b.payload].map(name))}) VALUES (${P}, ${P}, ${P})
      ON CONFLICT (${list([b.tenantId, b.name].map(name))}) DO UPDATE SET ${name(b.payload)} = excluded.${name(b.payload)}`;
  return d.statement("write_bundle", build, [tenantId, bundleName, payload]);
}

export function readBundleStatement(
  d: Dialect,
  tenantId: string,
  bundleName: string,
): Statement<Pick<DbRow<typeof bundles>, "payload">> {
  const { bundles: b } = d.tables;
  const build = () => sql`SELECT ${b.payload} FROM ${b} WHERE ${b.tenantId} = ${P} AND ${b.name} = ${P}`;
  return d.statement("read_bundle", build, [tenantId, bundleName]);
}

export function deleteBundleStatement(d: Dialect, tenantId: string, bundleName: string): Statement {
  const { bundles: b } = d.tables;
  const build = () => sql`DELETE FROM ${b} WHERE ${b.tenantId} = ${P} AND ${b.name} = ${P}`;
  return d.statement("delete_bundle", build, [tenantId, bundleName]);
}

// gc

/**
 * GC in two steps. `horizon`: moves the GC horizon to the newest transaction created before `olderThan` (ms); on
 * PostgreSQL it first locks every tenant's row, so no write is between taking its id and committing (an id below the
 * new horizon is then committed or gone for good). `collect`: removes the rows deleted at or before the horizon and
 * the transactions below it, each statement counting the rows it removed. SQLite runs both in one transaction;
 * PostgreSQL commits the horizon before collecting, so writes wait only for the horizon's move.
 */
export function gcStatements(d: Dialect, olderThan: number): { horizon: Statement[]; collect: Statement[] } {
  const { meta, tuples, attributes, transactions: tx, tenants } = d.tables;
  const cutoff = () => sql`(SELECT COALESCE(MAX(${tx.id}), 0) FROM ${tx} WHERE ${tx.createdAt} < ${P})`;
  const lock = () =>
    d.statement(
      "gc_lock_tenants",
      () =>
        sql`SELECT count(*) AS locked FROM (SELECT 1 FROM ${tenants} ORDER BY ${tenants.id} FOR NO KEY UPDATE) l`,
      [],
    );
  const move = d.statement(
    "gc_move_horizon",
    () =>
      sql`UPDATE ${meta} SET ${name(meta.value)} = ${cutoff()} WHERE ${meta.key} = 'gc_horizon' AND ${meta.value} < ${cutoff()}`,
    [olderThan, olderThan],
  );
  return {
    horizon: d.name === "pg" ? [lock(), move] : [move],
    collect: [
      d.statement(
        "gc_tuples",
        () => sql`DELETE FROM ${tuples} WHERE ${tuples.deletedTx} <= ${gcHorizon(d)}`,
        [],
      ),
      d.statement(
        "gc_attributes",
        () => sql`DELETE FROM ${attributes} WHERE ${attributes.deletedTx} <= ${gcHorizon(d)}`,
        [],
      ),
      d.statement("gc_transactions", () => sql`DELETE FROM ${tx} WHERE ${tx.id} < ${gcHorizon(d)}`, []),
    ],
  };
}
