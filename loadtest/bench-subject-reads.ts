/**
 * Relationships reads filtered by subject vs by entity at 1,000,000 tuples, on PostgreSQL and SQLite,
 * through the store's readTuples (what POST /relationships/read runs). Prints the median and p90 page time of each
 * filter. `--repo` runs the stores of another checkout (a worktree of the base commit: before/after in one session).
 *
 *   node loadtest/bench-subject-reads.ts [--repo DIR] [--rows 1000000] [--pages 40] [--page-size 50]
 *     [--databases pg,sqlite] [--hub 20000]
 *
 * Data: doc:{i/10}#viewer@user:{i % 5000}, so every user is the subject of 200 tuples spread over the whole table;
 * plus `--hub` tuples doc:hub-{i}#viewer@user:hub (one subject with many tuples: its pages are read one after the
 * other, following the cursor, as a client pages through them); and the pages of every `doc` tuple (an entity type
 * without ids, which no index serves), along the cursor. Rows are bulk-inserted with SQL (one transaction) after the
 * store's migrations.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Store, TupleFilter } from "@pemba/core";
import { connectPg } from "./lib/database.ts";

const { values } = parseArgs({
  options: {
    rows: { type: "string", default: "1000000" },
    pages: { type: "string", default: "40" },
    "page-size": { type: "string", default: "50" },
    databases: { type: "string", default: "pg,sqlite" },
    repo: { type: "string" },
    hub: { type: "string", default: "20000" },
  },
});
const core = values.repo === undefined ? undefined : resolve(values.repo, "packages/core/src");
const { PostgresStore, SqliteStore } = (await import(
  core === undefined ? "@pemba/core/node" : join(core, "node.ts")
)) as typeof import("@pemba/core/node");
const { startPostgres } = (await import(
  core === undefined ? "@pemba/core/testing/node" : join(core, "testing-node.ts")
)) as typeof import("@pemba/core/testing/node");
const ROWS = Number(values.rows);
const PAGES = Number(values.pages);
const PAGE_SIZE = Number(values["page-size"]);
const USERS = 5000;
const HUB = Number(values.hub);
// the drivers the store uses, from @pemba/core's own dependencies
const coreRequire = createRequire(import.meta.resolve("@pemba/core/node"));

const fill = `SELECT 't1', 'doc', CAST(i / 10 AS TEXT), 'viewer', 'user', CAST(i % ${USERS} AS TEXT), '', 1`;
const fillHub = `SELECT 't1', 'doc', 'hub-' || CAST(i AS TEXT), 'viewer', 'user', 'hub', '', 1`;
const COLUMNS =
  "tenant_id, entity_type, entity_id, relation, subject_type, subject_id, subject_relation, created_tx";

interface Database {
  store: Store;
  close(): Promise<void>;
}

async function postgres(): Promise<Database> {
  const server = await startPostgres();
  const store = await PostgresStore.open(server.url);
  const client = await connectPg(server.url);
  await client.query(`INSERT INTO tuples (${COLUMNS}) ${fill} FROM generate_series(0, ${ROWS - 1}) AS s(i)`);
  if (HUB > 0)
    await client.query(
      `INSERT INTO tuples (${COLUMNS}) ${fillHub} FROM generate_series(0, ${HUB - 1}) AS s(i)`,
    );
  await client.query("ANALYZE");
  return {
    store,
    close: async () => {
      await client.end();
      await store.close();
      await server.stop();
    },
  };
}

async function sqlite(dir: string): Promise<Database> {
  const path = join(dir, "subject-reads.db");
  SqliteStore.open(path).close();
  const Sqlite = coreRequire("better-sqlite3") as new (
    path: string,
  ) => { exec(s: string): void; close(): void };
  const db = new Sqlite(path);
  db.exec(`INSERT INTO tuples (${COLUMNS})
    WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${ROWS - 1}) ${fill} FROM s`);
  if (HUB > 0)
    db.exec(`INSERT INTO tuples (${COLUMNS})
      WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${HUB - 1}) ${fillHub} FROM s`);
  const store = SqliteStore.open(path);
  return {
    store,
    close: async () => {
      db.close();
      await store.close();
    },
  };
}

const FILTERS: [string, (k: number) => TupleFilter][] = [
  ["by entity ", (k) => ({ entity: { type: "doc", ids: [String(k * 37)] } })],
  [
    "by subject",
    (k) => ({ entity: { type: "doc", ids: [] }, subject: { type: "user", ids: [String(k * 97)] } }),
  ],
];

/** The hub's pages, one after the other (each from the last one's cursor). */
const HUB_FILTER: TupleFilter = { entity: { type: "doc", ids: [] }, subject: { type: "user", ids: ["hub"] } };

async function pageTimes(
  store: Store,
  filter: (k: number) => TupleFilter,
  follow: boolean,
): Promise<[number, number]> {
  const times: number[] = [];
  let cursor: string | undefined;
  for (let k = 1; k <= PAGES; k++) {
    const started = performance.now();
    const page = await store.readTuples("t1", 1, filter(k), PAGE_SIZE, cursor);
    times.push(performance.now() - started);
    if (page.items.length === 0) throw new Error("empty page");
    if (follow) cursor = page.cursor;
  }
  times.sort((a, b) => a - b);
  return [times[Math.floor(times.length / 2)]!, times[Math.floor(times.length * 0.9)]!];
}

const dir = mkdtempSync(join(tmpdir(), "pemba-subject-reads-"));
try {
  console.log(`${values.repo ?? "this checkout"}: ${ROWS} tuples, ${PAGES} pages of ${PAGE_SIZE} per filter`);
  for (const name of values.databases.split(",")) {
    const started = performance.now();
    const db = name === "pg" ? await postgres() : await sqlite(dir);
    console.log(`${name}: loaded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    const filters: [string, (k: number) => TupleFilter, boolean][] = FILTERS.map(([l, f]) => [l, f, false]);
    if (HUB > 0) filters.push([`hub (${HUB})`, () => HUB_FILTER, true]);
    // a read of the whole tenant, paged along the cursor: no filter picks an index
    filters.push(["by entity type", () => ({ entity: { type: "doc" } }), true]);
    for (const [label, filter, follow] of filters) {
      const [p50, p90] = await pageTimes(db.store, filter, follow);
      console.log(
        `${name.padEnd(7)} ${label}  median ${p50.toFixed(2).padStart(8)} ms  p90 ${p90.toFixed(2).padStart(8)} ms`,
      );
    }
    await db.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
