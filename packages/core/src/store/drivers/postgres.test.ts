import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { decodeSnapToken } from "../../service/snap-token.ts";
import { WatchHub } from "../../service/watch.ts";
import { describeStoreContract } from "../contract/index.ts";
import { migrate, openStore } from "../open.ts";
import type { SqlExecutor } from "../sql/executor.ts";
import { pgDialect, preparedName } from "../sql/pg-dialect.ts";
import { readTuplesStatement } from "../sql/read-plan.ts";
import { attr, tuple } from "../testing/fixtures.ts";
import { type PostgresServer, startPostgres } from "../testing/postgres-server.ts";
import { NAMED_MAX_LIST, PostgresStore, preparesByName } from "./postgres.ts";

let server: PostgresServer;
let admin: pg.Pool;
let n = 0;

beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Pool({ connectionString: server.url, max: 1 });
});
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

/** A fresh database per test. */
async function freshUrl(): Promise<string> {
  const name = `pemba_${n++}`;
  await admin.query(`CREATE DATABASE ${name}`);
  return server.url.replace(/\/postgres$/, `/${name}`);
}

describeStoreContract("postgres", async () => PostgresStore.open(await freshUrl()));

describe("PostgresStore", () => {
  it("serializes concurrent writes into distinct, increasing snaps and reports statement kinds", async () => {
    const kinds = new Set<string>();
    const store = await PostgresStore.open(await freshUrl(), { onQuery: (kind) => kinds.add(kind) });
    const snaps = await Promise.all(
      Array.from({ length: 8 }, (_, i) => store.write("t1", { tuples: [tuple(`doc:${i}#viewer@user:1`)] })),
    );
    expect(new Set(snaps).size).toBe(8);
    expect(Math.max(...snaps)).toBe(await store.headSnap("t1"));
    const all = await store.querySubjectTuples("t1", Math.max(...snaps), [
      {
        entityType: "doc",
        relations: ["viewer"],
        subjectType: "user",
        subjectIds: ["1"],
        subjectRelation: "",
      },
    ]);
    expect(all).toHaveLength(8);
    expect([...kinds].sort()).toEqual(["head_snap", "query_subject_tuples", "write"]);
    await store.close();
  });

  it("migrate applies the migrations once; openStore picks PostgresStore", async () => {
    const url = await freshUrl();
    expect(await migrate(url)).toEqual([
      "0000_init",
      "0001_seed",
      "0002_per_tenant_tx_ids",
      "0003_subject_page_index",
      "0004_expiry",
      "0005_partial_expiry_index",
      "0006_byte_order_keys",
    ]);
    expect(await migrate(url)).toEqual([]);
    const store = await openStore(url.replace(/^postgres:/, "postgresql:"));
    expect(store.kind).toBe("postgres");
    expect((await store.getTenant("t1"))?.name).toBe("example tenant");
    await store.close();
  });

  it("migration 0005: the expiry indexes hold only expiring rows", async () => {
    const url = await freshUrl();
    const store = await PostgresStore.open(url);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    const { rows } = await db.query(
      "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE '%_expires_idx' ORDER BY indexname",
    );
    await db.end();
    expect(rows).toEqual(
      ["attributes", "tuples"].map((table) => ({
        indexname: `${table}_expires_idx`,
        indexdef: `CREATE INDEX ${table}_expires_idx ON public.${table} USING btree (tenant_id, expires_at) WHERE (expires_at IS NOT NULL)`,
      })),
    );
    await store.close();
  });

  it("migration 0006: on a database collating by ICU en-US, key columns still compare byte by byte; the deleted-tx indexes hold only deleted rows", async () => {
    const name = `pemba_icu_${n++}`;
    await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`);
    const url = server.url.replace(/\/postgres$/, `/${name}`);
    const store = await PostgresStore.open(url);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    // the database's own order puts "a" before "B"; byte order (SQLite's, JavaScript's) puts "B" first
    const own = await db.query("SELECT x FROM (VALUES ('a'), ('B')) v(x) ORDER BY x");
    expect(own.rows.map((r) => r.x)).toEqual(["a", "B"]);
    for (const id of ["a", "B"]) await store.createTenant(id, id);
    const p1 = await store.listTenants(2);
    expect(p1.items.map((t) => t.id)).toEqual(["B", "a"]);
    expect((await store.listTenants(2, p1.cursor)).items.map((t) => t.id)).toEqual(["t1"]);
    const { rows } = await db.query(
      "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE '%_deleted_idx' ORDER BY indexname",
    );
    expect(rows).toEqual(
      ["attributes", "tuples"].map((table) => ({
        indexname: `${table}_deleted_idx`,
        indexdef: `CREATE INDEX ${table}_deleted_idx ON public.${table} USING btree (tenant_id, deleted_tx) WHERE (deleted_tx IS NOT NULL)`,
      })),
    );
    const collations = await db.query(
      `SELECT table_name, column_name, collation_name FROM information_schema.columns
        WHERE table_schema = 'public' AND data_type = 'text' AND table_name IN ('tuples', 'attributes')
        ORDER BY table_name, column_name`,
    );
    const keyed = ["entity_id", "entity_type", "tenant_id"];
    expect(
      collations.rows.map((r) => `${r.table_name}.${r.column_name} ${r.collation_name ?? "default"}`),
    ).toEqual([
      ...["attribute", ...keyed].map((c) => `attributes.${c} C`),
      "attributes.value default",
      "attributes.value_type default",
      ...[...keyed, "relation", "subject_id", "subject_relation", "subject_type"]
        .sort()
        .map((c) => `tuples.${c} C`),
    ]);
    await db.end();
    await store.close();
  });

  it("a page without an indexed filter reads the rows deleted after its snap by the deleted rows' index, in the generic plan too", async () => {
    const url = await freshUrl();
    const store = await PostgresStore.open(url);
    const head = await store.write("t1", { tuples: [tuple("doc:0#viewer@user:0")] });
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query(
      `INSERT INTO tuples (tenant_id, entity_type, entity_id, relation, subject_type, subject_id, subject_relation, created_tx)
        SELECT 't1', 'doc', 'g' || i, 'viewer', 'user', (i % 100)::text, '', 1 FROM generate_series(1, 100000) i`,
    );
    await db.query("ANALYZE tuples");
    // the plan a prepared statement settles on after five runs, whatever its values
    await db.query("SET plan_cache_mode = force_generic_plan");
    const page = readTuplesStatement(pgDialect, "t1", head, Date.now(), { entity: { type: "doc" } }, 0, 50);
    await db.query(`PREPARE page AS ${page.sql}`);
    const args = page.params.map((v) => (typeof v === "number" ? String(v) : db.escapeLiteral(String(v))));
    const { rows } = await db.query(`EXPLAIN (COSTS OFF) EXECUTE page(${args.join(", ")})`);
    const plan = rows.map((r) => String(r["QUERY PLAN"])).join("\n");
    // the live half walks the primary key in id order (its LIMIT stops it); the deleted half does not
    expect(plan.match(/tuples_pkey/g)).toHaveLength(1);
    expect(plan).toMatch(
      /Bitmap Index Scan on tuples_deleted_idx\s+Index Cond: \(\(tenant_id = \$\d+\) AND \(deleted_tx > \$\d+\)\)/,
    );
    const { rows: read } = await db.query(`EXECUTE page(${args.join(", ")})`);
    expect(read).toHaveLength(50);
    await db.end();
    await store.close();
  });

  it("migrating an already migrated database is a no-op", async () => {
    const url = await freshUrl();
    const first = await PostgresStore.open(url);
    const snap = await first.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    await first.close();
    const second = await PostgresStore.open(url);
    expect(await second.headSnap("t1")).toBe(snap);
    await second.close();
  });

  it("a write the database rejects part-way leaves nothing (one real transaction)", async () => {
    const url = await freshUrl();
    const store = await PostgresStore.open(url);
    const raw = new pg.Pool({ connectionString: url, max: 1 });
    await raw.query(`CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN
        IF NEW.attribute = 'boom' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
    await raw.query("CREATE TRIGGER boom BEFORE INSERT ON attributes FOR EACH ROW EXECUTE FUNCTION boom()");
    await raw.end();
    const head = await store.headSnap("t1");
    await expect(
      store.write("t1", {
        tuples: [tuple("doc:1#viewer@user:1")],
        attributes: [attr("doc:1$boom", { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true })],
      }),
    ).rejects.toMatchObject({ code: "ERROR_CODE_SQL_EXECUTION" });
    expect(await store.headSnap("t1")).toBe(head);
    expect((await store.readTuples("t1", head + 1, {}, 10)).items).toEqual([]);
    await store.close();
  });
});

describe("PostgresStore, prepared statements and pipelined transactions", () => {
  /** The session's prepared statements, read on the store's own (only) connection. */
  const prepared = (store: PostgresStore) =>
    (store as unknown as { exec: SqlExecutor }).exec.all<{ name: string; statement: string }>("test", {
      sql: "SELECT name, statement FROM pg_prepared_statements",
      params: [],
    });

  it("every statement is prepared once per connection under the hash of its text, one name per text", async () => {
    const store = await PostgresStore.open(await freshUrl(), { max: 1 });
    await store.createTenant("b", "b");
    await store.writeSchema("b", "v1", "entity user {}");
    for (let i = 0; i < 3; i++) {
      await store.write("t1", {
        tuples: [tuple(`doc:${i}#viewer@user:1`)],
        attributes: [attr(`doc:${i}$public`, { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true })],
      });
      await store.write("t1", { deleteTupleFilters: [{ entity: { type: "doc", ids: [String(i)] } }] });
      await store.changes("t1", 0, 100);
      await store.readTuples("t1", await store.headSnap("t1"), {}, 10);
    }
    await store.gc(new Date(Date.now() + 60_000));
    const rows = await prepared(store);
    expect(rows.length).toBeGreaterThan(10);
    for (const r of rows) expect(r.name).toBe(preparedName(r.statement));
    expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
    expect(new Set(rows.map((r) => r.statement)).size).toBe(rows.length);
    await store.close();
  });

  it("names differ for different texts, and a name reused for another text would be refused", async () => {
    expect(preparedName("SELECT 1")).toBe(preparedName("SELECT 1"));
    expect(preparedName("SELECT 1")).not.toBe(preparedName("SELECT 1 "));
    expect(preparedName("SELECT 1")).toMatch(/^pemba_[A-Za-z0-9_-]{40}$/);
    // what a collision would do: node-postgres refuses the second text on the connection, so a shared name
    // could never silently run another statement
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    await client.query({ name: "same", text: "SELECT 1 AS a" });
    await expect(client.query({ name: "same", text: "SELECT 2 AS a" })).rejects.toThrow(
      /Prepared statements must be unique/,
    );
    await client.end();
  });

  it("a statement whose lists hold at most NAMED_MAX_LIST values is prepared by name, a larger one is not", () => {
    const list = (n: number) => Array.from({ length: n }, (_, i) => String(i));
    const s = (params: unknown[]) => ({ sql: "SELECT 1", params });
    expect(NAMED_MAX_LIST).toBe(16);
    expect(preparesByName(s([]))).toBe(true);
    expect(preparesByName(s(["t1", 5, null]))).toBe(true);
    expect(preparesByName(s(["t1", list(1), list(16)]))).toBe(true);
    expect(preparesByName(s(["t1", list(16), list(17)]))).toBe(false);
    expect(preparesByName(s([list(1000)]))).toBe(false);
  });

  it("a 16-row write runs prepared statements, a 17-row write the same texts unnamed; the session keeps plan_cache_mode auto", async () => {
    const store = await PostgresStore.open(await freshUrl(), { max: 1 });
    const exec = (store as unknown as { exec: SqlExecutor }).exec;
    const rows = (n: number, at: number) =>
      Array.from({ length: n }, (_, i) => tuple(`doc:${at + i}#viewer@user:1`));
    const upsertText = async () =>
      (await prepared(store)).filter((r) => /INSERT INTO "tuples"/.test(r.statement)).map((r) => r.statement);
    await store.write("t1", { tuples: rows(17, 0) });
    expect(await upsertText()).toEqual([]);
    await store.write("t1", { tuples: rows(16, 100) });
    const named = await upsertText();
    // upsert_tuples_once: the upsert and the re-insert of re-expiring rows in one statement
    expect(named).toHaveLength(1);
    expect(named[0]).toMatch(/^WITH "w" AS MATERIALIZED/);
    await store.write("t1", { tuples: rows(17, 200) });
    await store.write("t1", { tuples: rows(1000, 300) });
    expect(await upsertText()).toEqual(named);
    const head = await store.headSnap("t1");
    expect((await store.readTuples("t1", head, {}, 2000)).items).toHaveLength(17 + 16 + 17 + 1000);
    expect(await exec.all("test", { sql: "SHOW plan_cache_mode", params: [] })).toEqual([
      { plan_cache_mode: "auto" },
    ]);
    await store.close();
  });

  it("a write goes out as ONE Sync in one socket write, answered by one ReadyForQuery, with no BEGIN or COMMIT; without its tenant it fails with TENANT_NOT_FOUND and writes nothing", async () => {
    const store = await PostgresStore.open(await freshUrl(), { max: 1 });
    const pool = (store as unknown as { exec: { pool: pg.Pool } }).exec.pool;
    // the protocol messages the pool's connection sends, its socket writes, and its ReadyForQuery answers
    const messages: string[] = [];
    let socketWrites = 0;
    let ready = 0;
    pool.on("acquire", (client) => {
      const connection = (client as unknown as { connection: Record<string, unknown> & pg.Connection })
        .connection;
      if (connection.traced) return;
      connection.traced = true;
      for (const m of ["parse", "bind", "describe", "execute", "sync", "query"]) {
        const send = (connection[m] as (...a: unknown[]) => unknown).bind(connection);
        connection[m] = (...a: unknown[]) => {
          messages.push(m === "query" ? `query ${a[0]}` : m);
          return send(...a);
        };
      }
      const stream = connection.stream as unknown as Record<string, (...a: unknown[]) => unknown>;
      for (const w of ["_write", "_writev"]) {
        const write = stream[w]!.bind(stream);
        stream[w] = (...a: unknown[]) => {
          socketWrites++;
          return write(...a);
        };
      }
      connection.on("readyForQuery", () => ready++);
    });
    const flight = async (write: () => Promise<unknown>) => {
      messages.length = 0;
      socketWrites = 0;
      ready = 0;
      await write();
    };
    // the first write parses its two named statements first (Parse and Sync each, pipelined before it)
    await flight(() => store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] }));
    expect(messages.filter((m) => m === "parse")).toHaveLength(2);
    const bound = ["bind", "describe", "execute", "bind", "describe", "execute", "sync"];
    await flight(() => store.write("t1", { tuples: [tuple("doc:2#viewer@user:1")] }));
    expect({ messages, socketWrites, ready }).toEqual({ messages: bound, socketWrites: 1, ready: 1 });
    await expect(
      flight(() => store.write("nobody", { tuples: [tuple("doc:3#viewer@user:1")] })),
    ).rejects.toMatchObject({ code: "ERROR_CODE_TENANT_NOT_FOUND" });
    // the failure answers at its ErrorResponse; the ReadyForQuery of the Sync may come in a later packet
    await vi.waitFor(() => expect(ready).toBe(1));
    expect({ messages, socketWrites, ready }).toEqual({ messages: bound, socketWrites: 1, ready: 1 });
    const exec = (store as unknown as { exec: SqlExecutor }).exec;
    expect(
      await exec.all("test", {
        sql: "SELECT (SELECT count(*)::int FROM tuples) AS tuples, (SELECT count(*)::int FROM transactions) AS txs",
        params: [],
      }),
    ).toEqual([{ tuples: 2, txs: 2 }]);
    // the connection goes on
    await store.write("t1", { tuples: [tuple("doc:4#viewer@user:1")] });
    expect((await store.readTuples("t1", await store.headSnap("t1"), {}, 10)).items).toHaveLength(3);
    await store.close();
  });

  it("a statement failing in a pipelined transaction rolls back the statements sent with it, and the connection goes on", async () => {
    const url = await freshUrl();
    const store = await PostgresStore.open(url, { max: 1 });
    const exec = (store as unknown as { exec: SqlExecutor }).exec;
    await expect(
      exec.transaction("test", [
        { sql: "INSERT INTO bundles (tenant_id, name, payload) VALUES ('t1', 'a', '{}')", params: [] },
        { sql: "SELECT 1 / $1::int AS x", params: [0] },
        { sql: "INSERT INTO bundles (tenant_id, name, payload) VALUES ('t1', 'b', '{}')", params: [] },
      ]),
    ).rejects.toMatchObject({ code: "ERROR_CODE_SQL_EXECUTION", details: [{ reason: "division by zero" }] });
    expect(await exec.all("test", { sql: "SELECT count(*)::int AS n FROM bundles", params: [] })).toEqual([
      { n: 0 },
    ]);
    const results = await exec.transaction("test", [
      {
        sql: "INSERT INTO bundles (tenant_id, name, payload) VALUES ('t1', 'a', '{}') RETURNING name",
        params: [],
      },
      { sql: "SELECT count(*)::int AS n FROM bundles", params: [] },
    ]);
    expect(results).toEqual([
      { rows: [{ name: "a" }], changes: 1 },
      { rows: [{ n: 1 }], changes: 1 },
    ]);
    // no statement: nothing sent, no result
    expect(await exec.transaction("test", [])).toEqual([]);
    await store.close();
  });
});

// ---- concurrent writers: writes of different tenants do not wait for each other, writes of one tenant
// commit in snap order, so snap tokens stay exact and the change feed loses and reorders nothing while many writers
// race; GC waits for a write between its id and its commit; notices reach other connections.

async function freshStore(): Promise<{ store: PostgresStore; url: string }> {
  const url = await freshUrl();
  return { store: await PostgresStore.open(url, { max: 20 }), url };
}

/**
 * A transaction of `tenant` stopped between taking its id and committing, as a write would be: it holds the tenant's
 * row lock until `commit` or `rollback`.
 */
async function heldWrite(url: string, tenant: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("BEGIN");
  const { rows } = await client.query(
    "UPDATE tenants SET head_tx = nextval('pemba_tx_ids') WHERE id = $1 RETURNING head_tx",
    [tenant],
  );
  const id = Number(rows[0].head_tx);
  await client.query("INSERT INTO transactions (id, tenant_id, created_at) VALUES ($1, $2, $3)", [
    id,
    tenant,
    0,
  ]);
  await client.query(
    "INSERT INTO tuples (tenant_id, entity_type, entity_id, relation, subject_type, subject_id, subject_relation, created_tx) VALUES ($1, 'doc', 'held', 'viewer', 'user', '1', '', $2)",
    [tenant, id],
  );
  await client.query("SELECT pg_notify('pemba_writes', json_build_array($1::text, $2::bigint)::text)", [
    tenant,
    id,
  ]);
  const end = async (how: "COMMIT" | "ROLLBACK") => {
    await client.query(how);
    await client.end();
  };
  return { id, commit: () => end("COMMIT"), rollback: () => end("ROLLBACK") };
}

/** Whether `p` is still pending after the event loop and the database had `ms` to settle it. */
async function pending(p: Promise<unknown>, ms = 300): Promise<boolean> {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((r) => setTimeout(r, ms));
  return !settled;
}

const viewers = (store: PostgresStore, tenant: string, snap: number) =>
  store.querySubjectTuples(tenant, snap, [
    { entityType: "doc", relations: ["viewer"], subjectType: "user", subjectIds: ["1"], subjectRelation: "" },
  ]);

describe("PostgresStore, concurrent writers", () => {
  it("a write of another tenant does not wait for a write in flight; one of the same tenant does, and gets a later snap", async () => {
    const { store, url } = await freshStore();
    await store.createTenant("a", "a");
    await store.createTenant("b", "b");
    const held = await heldWrite(url, "a");
    // tenant b's write commits while a's is between its id and its commit
    const b = await store.write("b", { tuples: [tuple("doc:1#viewer@user:1")] });
    expect(b).toBeGreaterThan(held.id);
    // a's head is still before the write in flight, although b committed a later id
    expect(await store.headSnap("a")).toBeLessThan(held.id);
    expect(await store.headSnap("b")).toBe(b);
    const a = store.write("a", { tuples: [tuple("doc:2#viewer@user:1")] });
    expect(await pending(a)).toBe(true);
    await held.commit();
    const snap = await a;
    expect(snap).toBeGreaterThan(b);
    expect((await viewers(store, "a", held.id)).map((t) => t.entity.id)).toEqual(["held"]);
    expect((await viewers(store, "a", snap)).map((t) => t.entity.id).sort()).toEqual(["2", "held"]);
    await store.close();
  });

  it("a write to a missing tenant fails with ERROR_CODE_TENANT_NOT_FOUND and writes nothing", async () => {
    const { store, url } = await freshStore();
    await expect(store.write("nope", { tuples: [tuple("doc:1#viewer@user:1")] })).rejects.toMatchObject({
      code: "ERROR_CODE_TENANT_NOT_FOUND",
    });
    const check = new pg.Client({ connectionString: url });
    await check.connect();
    const { rows } = await check.query(
      "SELECT (SELECT count(*) FROM transactions) AS tx, (SELECT count(*) FROM tuples) AS tuples",
    );
    await check.end();
    expect(rows[0]).toEqual({ tx: "0", tuples: "0" });
    await store.close();
  });

  it("snap tokens stay exact while 16 writers of two tenants race a reader holding tokens", async () => {
    const { store } = await freshStore();
    await store.createTenant("t2", "two");
    const acked = new Map<string, Map<string, number>>([
      ["t1", new Map()],
      ["t2", new Map()],
    ]);
    const reads: { tenant: string; snap: number; seen: string[] }[] = [];
    let writing = true;
    const writer = async (w: number) => {
      const tenant = w % 2 === 0 ? "t1" : "t2";
      // at least 15 writes each, and on until the reader has read during the race (writes take one round trip
      // now: 240 of them can end before a slow reader's third pass)
      for (let i = 0; i < 15 || reads.length <= 10; i++) {
        const id = `${w}-${i}`;
        const snap = await store.write(tenant, { tuples: [tuple(`doc:${id}#viewer@user:1`)] });
        acked.get(tenant)!.set(id, snap);
      }
    };
    const reader = async () => {
      while (writing) {
        for (const tenant of ["t1", "t2"]) {
          // a token as a client holds it: the snap of an acknowledged write, or the head
          const tokens = [...acked.get(tenant)!.values()];
          const snap = tokens.length > 0 ? tokens[tokens.length - 1]! : await store.headSnap(tenant);
          const first = (await viewers(store, tenant, snap)).map((t) => t.entity.id).sort();
          reads.push({ tenant, snap, seen: first });
          const head = await store.headSnap(tenant);
          reads.push({
            tenant,
            snap: head,
            seen: (await viewers(store, tenant, head)).map((t) => t.entity.id).sort(),
          });
        }
      }
    };
    const done = Promise.all(Array.from({ length: 16 }, (_, w) => writer(w))).finally(() => {
      writing = false;
    });
    await Promise.all([done, reader()]);
    expect(reads.length).toBeGreaterThan(10);
    // every read at a snap saw exactly the writes acknowledged with a snap at or before it, no more, no less
    for (const { tenant, snap, seen } of reads) {
      const expected = [...acked.get(tenant)!].filter(([, s]) => s <= snap).map(([id]) => id);
      expect(seen).toEqual(expected.sort());
    }
    // and reading again at those snaps now, with every write committed, gives the same answers
    for (const { tenant, snap, seen } of reads.slice(-20)) {
      expect((await viewers(store, tenant, snap)).map((t) => t.entity.id).sort()).toEqual(seen);
    }
    await store.close();
  });

  it("the watch sees every acknowledged write of 16 concurrent writers once, in snap order", async () => {
    const { store } = await freshStore();
    const hub = new WatchHub(store);
    const abort = new AbortController();
    const stream = hub.open("t1", 0, { signal: abort.signal, pollMs: 5 });
    const arrived: { snap: number; id: string }[] = [];
    const acked = new Map<string, number>();
    const total = 16 * 12;
    const watcher = (async () => {
      for await (const batch of stream) {
        const snap = decodeSnapToken(batch.snapToken);
        for (const c of batch.changes) arrived.push({ snap, id: c.tuple!.entity.id });
        if (arrived.length >= total) break;
      }
    })();
    await Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (let i = 0; i < 12; i++) {
          const id = `${w}-${i}`;
          acked.set(id, await store.write("t1", { tuples: [tuple(`doc:${id}#viewer@user:1`)] }));
        }
      }),
    );
    await watcher;
    abort.abort();
    expect(arrived).toHaveLength(total);
    expect(new Set(arrived.map((a) => a.id)).size).toBe(total);
    for (const a of arrived) expect(a.snap).toBe(acked.get(a.id));
    const snaps = arrived.map((a) => a.snap);
    expect(snaps).toEqual([...snaps].sort((x, y) => x - y));
    await store.close();
  });

  it("a waiting watch stream wakes on the write's notice, not its poll", async () => {
    const { store } = await freshStore();
    const hub = new WatchHub(store);
    const abort = new AbortController();
    // a poll a minute: only the notice can deliver the write within the test's time
    const stream = hub.open("t1", await store.headSnap("t1"), { signal: abort.signal, pollMs: 60_000 });
    await store.onWrite(() => {}); // the hub's listening connection is up
    const first = stream.next();
    await new Promise((r) => setTimeout(r, 200)); // the stream read once, found nothing, and waits
    const snap = await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    const batch = await first;
    expect(batch.done).toBe(false);
    expect(decodeSnapToken((batch.value as { snapToken: string }).snapToken)).toBe(snap);
    expect(hub.polls).toBe(0);
    abort.abort();
    await store.close();
  });

  it("GC waits for a write between its id and its commit, so the horizon never passes a write in flight", async () => {
    const { store, url } = await freshStore();
    await store.createTenant("b", "b");
    await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    await store.write("t1", { deleteTuples: [tuple("doc:1#viewer@user:1")] });
    const held = await heldWrite(url, "b");
    const later = await store.write("t1", { tuples: [tuple("doc:2#viewer@user:1")] });
    const gc = store.gc(new Date(Date.now() + 60_000));
    expect(await pending(gc)).toBe(true);
    await held.commit();
    expect(await gc).toBe(1); // doc:1, deleted before the horizon
    const horizon = await store.gcHorizon();
    expect(horizon).toBe(later);
    expect(horizon).toBeGreaterThan(held.id);
    // the write in flight committed before the horizon moved: its tenant's head is at least the horizon, and its row
    // is readable there
    expect(await store.headSnap("b")).toBe(horizon);
    expect((await viewers(store, "b", horizon)).map((t) => t.entity.id)).toEqual(["held"]);
    await store.close();
  });

  it("every connection hears each committed write once, in commit order; a rolled-back write is not heard", async () => {
    const { store, url } = await freshStore();
    const other = await PostgresStore.open(url);
    const heard: [string, number][] = [];
    await other.onWrite((tenant, snap) => heard.push([tenant, snap]));
    await store.createTenant("b", "b");
    const first = await store.write("t1", { tuples: [tuple("doc:0#viewer@user:1")] });
    for (let i = 0; i < 500 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(heard).toEqual([["t1", first]]);
    const held = await heldWrite(url, "b");
    await held.rollback();
    const snaps: [string, number][] = [];
    for (let i = 1; i <= 6; i++) {
      const tenant = i % 2 === 0 ? "t1" : "b";
      snaps.push([tenant, await store.write(tenant, { tuples: [tuple(`doc:${i}#viewer@user:1`)] })]);
    }
    for (let i = 0; i < 500 && heard.length < 7; i++) await new Promise((r) => setTimeout(r, 10));
    expect(heard).toEqual([["t1", first], ...snaps]);
    await other.close();
    await store.close();
  });
});
