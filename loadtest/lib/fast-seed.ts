/**
 * Permify's seed dataset (the rows k6/permify-seed-writer.js writes through HTTP) written straight into a SQLite
 * file or a PostgreSQL database with set-based SQL, for the sizes where HTTP seeding takes tens of minutes
 * (2,500,000 ids = 20,000,000 rows).
 *
 * The schema goes through the normal API first (a `pemba serve` on the database, which also creates the tables);
 * then ONE transaction of raw SQL writes the same rows the seed writer's requests would: per id i, in this order,
 * the tuples user:i#self@user:i, user:i#follower@user:(i+1)%n, user:i#blocked@user:(i+2)%n, content:i#owner@user:i,
 * interaction:i#creator@user:i, interaction:i#parent@content:i, then (after every tuple) the attributes
 * user:i is_public and content:i is_public (i % 4 == 0). Row ids and transaction ids are the ones the HTTP writes
 * take: the writer posts 1,000 tuples, then 1,000 attributes, per request, each request one transaction, so row j of
 * the tuples has created_tx = first + floor(j / 1000). fast-seed.test.ts checks the rows equal the HTTP writer's.
 *
 * The tables' secondary indexes are dropped before the insert and created again from their own definitions (read
 * from the database's catalog) after it: one sort per index instead of 20 M random index inserts.
 */
import { createRequire } from "node:module";
import { connectPg } from "./database.ts";
import { TENANT_ID, writeSeedSchema } from "./seed.ts";
import { startPemba } from "./servers.ts";

const BATCH = 1000;

/** Per id: the 6 tuples (k = 0..5) as entity type, relation, subject type, subject id (0: i, 1: i+1, 2: i+2). */
const TUPLES: [string, string, string, number][] = [
  ["user", "self", "user", 0],
  ["user", "follower", "user", 1],
  ["user", "blocked", "user", 2],
  ["content", "owner", "user", 0],
  ["interaction", "creator", "user", 0],
  ["interaction", "parent", "content", 0],
];
const ATTRIBUTES = ["user", "content"];

const isPostgres = (database: string) => /^postgres(ql)?:\/\//.test(database);

export interface FastSeedResult {
  schemaVersion: string;
  seconds: number;
  tuples: number;
  attributes: number;
}

/**
 * Writes the schema (through a `pemba serve` of this checkout with the replica off) and then the dataset at `ids`
 * ids into `database` (a SQLite path or a postgres:// URL), which must hold no tuples or attributes yet.
 */
export async function fastSeed(
  database: string,
  ids: number,
  log: (line: string) => void = () => {},
): Promise<FastSeedResult> {
  if (!(Number.isInteger(ids) && ids >= 3)) throw new Error("fastSeed: ids must be an integer >= 3");
  const started = performance.now();
  const server = await startPemba(database, ["--log-level", "warn", "--replica", "off"]);
  let schemaVersion: string;
  try {
    schemaVersion = await writeSeedSchema(server.url);
  } finally {
    await server.stop();
  }
  log(`schema ${schemaVersion} written; inserting ${8 * ids} rows ...`);
  if (isPostgres(database)) await seedPostgres(database, ids, log);
  else seedSqlite(database, ids, log);
  return {
    schemaVersion,
    seconds: (performance.now() - started) / 1000,
    tuples: 6 * ids,
    attributes: 2 * ids,
  };
}

/** The number of HTTP writes (transactions) of the seed writer: tuple batches, then attribute batches. */
function batches(ids: number): { tupleTxs: number; attributeTxs: number } {
  return { tupleTxs: Math.ceil((6 * ids) / BATCH), attributeTxs: Math.ceil((2 * ids) / BATCH) };
}

const tupleValues = TUPLES.map(
  ([et, rel, st, next], k) => `(${k}, '${et}', '${rel}', '${st}', ${next})`,
).join(", ");
const attributeValues = ATTRIBUTES.map((et, k) => `(${k}, '${et}')`).join(", ");

/**
 * The INSERT of every tuple row. `series` is a CTE (SQLite's recursive one) or "" and `n` the row source it names
 * (i = 0..ids-1: the CTE or generate_series); `id0` (the first row id) and `tx0` (the first transaction id) are
 * inlined numbers; `text` casts an integer to text.
 */
function insertTuples(
  series: string,
  n: string,
  ids: number,
  id0: number,
  tx0: number,
  text: (e: string) => string,
): string {
  return `WITH ${series ? `RECURSIVE ${series},` : ""} v(k, et, rel, st, nx) AS (VALUES ${tupleValues})
    INSERT INTO tuples (${TUPLE_COLUMNS})
    SELECT ${id0} + 6 * n.i + v.k, '${TENANT_ID}', v.et, ${text("n.i")}, v.rel, v.st,
      ${text(`(n.i + v.nx) % ${ids}`)}, '', ${tx0} + (6 * n.i + v.k) / ${BATCH}
    FROM ${n} CROSS JOIN v`;
}

function insertAttributes(
  series: string,
  n: string,
  id0: number,
  tx0: number,
  text: (e: string) => string,
): string {
  return `WITH ${series ? `RECURSIVE ${series},` : ""} v(k, et) AS (VALUES ${attributeValues})
    INSERT INTO attributes (${ATTRIBUTE_COLUMNS})
    SELECT ${id0} + 2 * n.i + v.k, '${TENANT_ID}', v.et, ${text("n.i")}, 'is_public', 'ATTRIBUTE_TYPE_BOOLEAN',
      CASE WHEN n.i % 4 = 0 THEN 'true' ELSE 'false' END, ${tx0} + (2 * n.i + v.k) / ${BATCH}
    FROM ${n} CROSS JOIN v`;
}

const TUPLE_COLUMNS =
  "id, tenant_id, entity_type, entity_id, relation, subject_type, subject_id, subject_relation, created_tx";
const ATTRIBUTE_COLUMNS = "id, tenant_id, entity_type, entity_id, attribute, value_type, value, created_tx";

interface SqliteDb {
  prepare(sql: string): {
    get(...p: unknown[]): unknown;
    all(...p: unknown[]): unknown[];
    run(...p: unknown[]): unknown;
  };
  exec(sql: string): void;
  pragma(sql: string): unknown;
  close(): void;
}

function seedSqlite(path: string, ids: number, log: (line: string) => void): void {
  const Database = createRequire(import.meta.resolve("@pemba/core/node"))("better-sqlite3") as new (
    p: string,
  ) => SqliteDb;
  const db = new Database(path);
  try {
    const count = db
      .prepare("SELECT (SELECT count(*) FROM tuples) + (SELECT count(*) FROM attributes) AS n")
      .get() as {
      n: number;
    };
    if (count.n !== 0) throw new Error(`fastSeed: ${path} already holds ${count.n} tuples and attributes`);
    // a rollback journal instead of WAL for the load: new pages need no journal, where WAL would write each twice
    db.pragma("journal_mode = DELETE");
    db.pragma("synchronous = OFF");
    db.pragma("cache_size = -262144");
    const indexes = db
      .prepare(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('tuples', 'attributes') AND sql IS NOT NULL",
      )
      .all() as { name: string; sql: string }[];
    const { tupleTxs, attributeTxs } = batches(ids);
    const now = Date.now();
    const series = `n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${ids - 1})`;
    const text = (e: string) => `CAST(${e} AS TEXT)`;
    db.exec("BEGIN");
    const tx0 =
      (db.prepare("SELECT value FROM pemba_meta WHERE key = 'tx'").get() as { value: number }).value + 1;
    const txLast = tx0 + tupleTxs + attributeTxs - 1;
    const tupleId0 = (
      db
        .prepare("SELECT coalesce(max(seq), 0) + 1 AS v FROM sqlite_sequence WHERE name = 'tuples'")
        .get() as { v: number }
    ).v;
    const attributeId0 = (
      db
        .prepare("SELECT coalesce(max(seq), 0) + 1 AS v FROM sqlite_sequence WHERE name = 'attributes'")
        .get() as { v: number }
    ).v;
    for (const index of indexes) db.exec(`DROP INDEX "${index.name}"`);
    db.exec(
      `WITH RECURSIVE t(id) AS (SELECT ${tx0} UNION ALL SELECT id + 1 FROM t WHERE id < ${txLast})
       INSERT INTO transactions (id, tenant_id, created_at) SELECT id, '${TENANT_ID}', ${now} FROM t`,
    );
    db.prepare("UPDATE pemba_meta SET value = ? WHERE key = 'tx'").run(txLast);
    let at = performance.now();
    db.exec(insertTuples(series, "n", ids, tupleId0, tx0, text));
    db.exec(insertAttributes(series, "n", attributeId0, tx0 + tupleTxs, text));
    log(
      `rows inserted in ${((performance.now() - at) / 1000).toFixed(1)} s; creating ${indexes.length} indexes ...`,
    );
    at = performance.now();
    for (const index of indexes) db.exec(index.sql);
    db.exec("COMMIT");
    log(`indexes created in ${((performance.now() - at) / 1000).toFixed(1)} s`);
    db.pragma("journal_mode = WAL");
  } finally {
    db.close();
  }
}

async function seedPostgres(url: string, ids: number, log: (line: string) => void): Promise<void> {
  const db = await connectPg(url);
  const one = async <T>(statement: string): Promise<T> => (await db.query(statement)).rows[0] as T;
  try {
    const count = await one<{ n: string }>(
      "SELECT (SELECT count(*) FROM tuples) + (SELECT count(*) FROM attributes) AS n",
    );
    if (Number(count.n) !== 0)
      throw new Error(`fastSeed: the database already holds ${count.n} tuples and attributes`);
    await db.query("SET maintenance_work_mem = '512MB'");
    const indexes = (
      await db.query(
        `SELECT indexname AS name, indexdef AS sql FROM pg_indexes WHERE schemaname = current_schema()
         AND tablename IN ('tuples', 'attributes') AND indexname NOT IN (SELECT conname FROM pg_constraint)`,
      )
    ).rows as { name: string; sql: string }[];
    const { tupleTxs, attributeTxs } = batches(ids);
    const now = Date.now();
    const n = `generate_series(0, ${ids - 1}) AS n(i)`;
    const text = (e: string) => `(${e})::text`;
    await db.query("BEGIN");
    // the tenant's row lock, as every write takes it before its transaction id (write-plan.ts nextTxStatement)
    await db.query(`SELECT head_tx FROM tenants WHERE id = '${TENANT_ID}' FOR UPDATE`);
    const tx0 = Number((await one<{ v: string }>("SELECT nextval('pemba_tx_ids') AS v")).v);
    const txLast = tx0 + tupleTxs + attributeTxs - 1;
    await db.query(`SELECT setval('pemba_tx_ids', ${txLast})`);
    await db.query(`UPDATE tenants SET head_tx = ${txLast} WHERE id = '${TENANT_ID}'`);
    await db.query(
      `INSERT INTO transactions (id, tenant_id, created_at) SELECT t, '${TENANT_ID}', ${now} FROM generate_series(${tx0}, ${txLast}) t`,
    );
    const tupleId0 = Number(
      (await one<{ v: string }>("SELECT nextval(pg_get_serial_sequence('tuples', 'id')) AS v")).v,
    );
    const attributeId0 = Number(
      (await one<{ v: string }>("SELECT nextval(pg_get_serial_sequence('attributes', 'id')) AS v")).v,
    );
    for (const index of indexes) await db.query(`DROP INDEX "${index.name}"`);
    let at = performance.now();
    await db.query(insertTuples("", n, ids, tupleId0, tx0, text));
    await db.query(insertAttributes("", n, attributeId0, tx0 + tupleTxs, text));
    await db.query(`SELECT setval(pg_get_serial_sequence('tuples', 'id'), ${tupleId0 + 6 * ids - 1})`);
    await db.query(
      `SELECT setval(pg_get_serial_sequence('attributes', 'id'), ${attributeId0 + 2 * ids - 1})`,
    );
    log(
      `rows inserted in ${((performance.now() - at) / 1000).toFixed(1)} s; creating ${indexes.length} indexes ...`,
    );
    at = performance.now();
    for (const index of indexes) await db.query(index.sql);
    await db.query("COMMIT");
    log(`indexes created in ${((performance.now() - at) / 1000).toFixed(1)} s; vacuum analyze ...`);
    // statistics and the visibility map now, not by autovacuum in the middle of a measurement
    await db.query("VACUUM (ANALYZE) tuples");
    await db.query("VACUUM (ANALYZE) attributes");
  } catch (error) {
    await db.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    await db.end();
  }
}
