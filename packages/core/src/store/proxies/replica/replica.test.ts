import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PembaService } from "../../../service/pemba-service.ts";
import { encodeSnapToken } from "../../../service/snap-token.ts";
import { describeStoreContract } from "../../contract/index.ts";
import { LibsqlStore } from "../../drivers/libsql.ts";
import { PostgresStore } from "../../drivers/postgres.ts";
import { SqliteStore } from "../../drivers/sqlite.ts";
import type { Store } from "../../store.ts";
import { attr, keys, tuple } from "../../testing/fixtures.ts";
import { type PostgresServer, startPostgres } from "../../testing/postgres-server.ts";
import { type ReplicaOptions, ReplicaStore } from "./index.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-replica-"));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NO_REFRESH: ReplicaOptions = { refreshMs: 0 };
const bool = (data: boolean) => ({ type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data });
const viewers = (ids: string[]) => [{ entityType: "doc", entityIds: ids, relations: ["viewer"] }];

async function replicaOf(inner: Store, opts: ReplicaOptions = NO_REFRESH): Promise<ReplicaStore> {
  const store = await ReplicaStore.open(inner, opts);
  if (!(store instanceof ReplicaStore)) throw new Error("expected a replica");
  return store;
}

/** Statement kinds the inner store ran, recorded through its onQuery hook. */
function recorder() {
  const kinds: string[] = [];
  return { kinds, onQuery: (kind: string) => kinds.push(kind) };
}

describeStoreContract("replica over sqlite", async () =>
  replicaOf(SqliteStore.open(join(dir, `contract-${n++}.db`))),
);
describeStoreContract("replica over libsql file", async () =>
  replicaOf(await LibsqlStore.open(`file:${join(dir, `contract-libsql-${n++}.db`)}`)),
);

const SCHEMA = `entity user {}
entity doc {
  relation owner @user
  relation viewer @user
  attribute public boolean
  permission view = owner or viewer or public
}`;

const checkQuery = (doc: string, user: string) => ({
  entity: { type: "doc", id: doc },
  permission: "view",
  subject: { type: "user", id: user, relation: "" },
});
const meta = { schemaVersion: "", snapToken: "", depth: 10 };

describe("ReplicaStore over SQLite", () => {
  it("after warm-up, checks run no SQL statement at all", async () => {
    const file = join(dir, `zero-sql-${n++}.db`);
    const rec = recorder();
    const store = await replicaOf(SqliteStore.open(file, { onQuery: rec.onQuery }));
    const service = new PembaService(store);
    await service.writeSchema("t1", SCHEMA);
    await service.writeData(
      "t1",
      "",
      [tuple("doc:1#owner@user:1"), tuple("doc:2#viewer@user:2")],
      [attr("doc:3$public", bool(true))],
    );
    // warm-up: each document's keys are read once
    for (const doc of ["1", "2", "3", "4"]) await service.check("t1", meta, checkQuery(doc, "1"));
    rec.kinds.length = 0;
    const decisions: string[] = [];
    for (let i = 0; i < 500; i++) {
      const outcome = service.check("t1", meta, checkQuery(String(1 + (i % 4)), String(1 + (i % 2))));
      // answered synchronously: no storage round trip
      expect(outcome instanceof Promise).toBe(false);
      decisions.push((outcome as { can: string }).can);
    }
    expect(rec.kinds).toEqual([]);
    expect(decisions.slice(0, 4)).toEqual([
      "CHECK_RESULT_ALLOWED", // doc:1 owner user:1
      "CHECK_RESULT_ALLOWED", // doc:2 viewer user:2
      "CHECK_RESULT_ALLOWED", // doc:3 public
      "CHECK_RESULT_DENIED", // doc:4 nothing
    ]);
    await store.close();
  });

  it("reads nothing at open; a key read once answers from memory; reads older than its fill go to SQL, exactly", async () => {
    const file = join(dir, `preload-${n++}.db`);
    const writer = SqliteStore.open(file);
    const s1 = await writer.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    const s2 = await writer.write("t1", {
      deleteTuples: [tuple("doc:1#viewer@user:1")],
      tuples: [tuple("doc:1#viewer@user:2")],
      attributes: [attr("doc:1$public", bool(true))],
    });
    await writer.createTenant("b", "B");
    await writer.write("b", { tuples: [tuple("doc:9#viewer@user:9")] });
    const rec = recorder();
    const store = await replicaOf(SqliteStore.open(file, { onQuery: rec.onQuery }));
    expect(rec.kinds).toEqual(["gc_horizon"]);
    expect(store.stats()).toMatchObject({ tenants: 0, entries: 0, rows: 0 });
    rec.kinds.length = 0;
    const head = await store.headSnap("t1");
    expect(head).toBeGreaterThanOrEqual(s2);
    // following a tenant costs one look; its first read of a key one statement
    expect(rec.kinds).toEqual(["freshness"]);
    expect(keys(await store.queryTuples("t1", head, viewers(["1"])))).toEqual(["doc:1#viewer@user:2"]);
    const headB = await store.headSnap("b");
    expect(keys(await store.queryTuples("b", headB, viewers(["9"])))).toEqual(["doc:9#viewer@user:9"]);
    expect(rec.kinds).toEqual(["freshness", "query_tuples", "freshness", "query_tuples"]);
    rec.kinds.length = 0;
    expect(keys(store.queryTuples("t1", head, viewers(["1"])) as never)).toEqual(["doc:1#viewer@user:2"]);
    expect(keys(store.queryTuples("b", headB, viewers(["9"])) as never)).toEqual(["doc:9#viewer@user:9"]);
    expect(rec.kinds).toEqual([]);
    expect(store.stats()).toMatchObject({ tenants: 2, entries: 2, rows: 2, hits: 2, misses: 2 });
    // object ids are the store's
    expect(await store.listObjectIds("t1", head, "user")).toEqual(["2"]);
    rec.kinds.length = 0;
    // s1 predates the key's fill: answered by SQLite, exactly, and not filed
    expect(keys(await store.queryTuples("t1", s1, viewers(["1"])))).toEqual(["doc:1#viewer@user:1"]);
    expect(keys(await store.queryTuples("t1", s1, viewers(["1"])))).toEqual(["doc:1#viewer@user:1"]);
    expect(rec.kinds).toEqual(["query_tuples", "query_tuples"]);
    await store.close();
    await writer.close();
  });

  it("reporting: a read says whether it went to the store, exactly as the statements run (synchronous SQLite too)", async () => {
    const file = join(dir, `report-${n++}.db`);
    const writer = SqliteStore.open(file);
    const s1 = await writer.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    await writer.write("t1", {
      tuples: [tuple("doc:2#viewer@user:2")],
      attributes: [attr("doc:1$public", bool(true))],
    });
    const rec = recorder();
    const store = await replicaOf(SqliteStore.open(file, { onQuery: rec.onQuery }));
    const head = await store.headSnap("t1");
    const read = (ids: string[], snap = head) => {
      const report = { store: false };
      rec.kinds.length = 0;
      const out = store.reporting(report).queryTuplesAndAttributes!("t1", snap, viewers(ids), [
        { entityType: "doc", entityIds: ids, attributes: ["public"] },
      ]);
      return { out, store: report.store, statements: rec.kinds.length };
    };
    // keys not held: one statement, answered synchronously by SQLite, and reported as the store's
    const cold = read(["1"]);
    expect(cold.out instanceof Promise).toBe(false);
    expect(cold).toMatchObject({ store: true, statements: 1 });
    // held: no statement, reported as the working set's
    expect(read(["1"])).toMatchObject({ store: false, statements: 0 });
    // one key held, one not: the store's
    expect(read(["1", "2"])).toMatchObject({ store: true, statements: 1 });
    // a snap older than the keys' fill: the store's
    expect(read(["1"], s1)).toMatchObject({ store: true, statements: 1 });
    await store.close();
    await writer.close();
  });

  it("a write by another process is seen after the refresh, and at once when a read names its snap", async () => {
    const file = join(dir, `two-processes-${n++}.db`);
    const rec = recorder();
    const store = await replicaOf(SqliteStore.open(file, { onQuery: rec.onQuery }));
    const other = SqliteStore.open(file);
    const before = await store.headSnap("t1");
    expect(await store.queryTuples("t1", before, viewers(["1"]))).toEqual([]);
    const s1 = await other.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    // not yet refreshed: the head is the replica's, reads at it see the old state (from memory)
    expect(store.headSnap("t1")).toBe(before);
    expect(store.queryTuples("t1", before, viewers(["1"]))).toEqual([]);
    // a read at the newer snap (a token from the other instance) catches up first: the entry is updated
    const got = store.queryTuples("t1", s1, viewers(["1"]));
    expect(got).toBeInstanceOf(Promise);
    expect(keys(await got)).toEqual(["doc:1#viewer@user:1"]);
    expect(store.headSnap("t1")).toBe(s1);
    // a further write is seen after a refresh round
    const s2 = await other.write("t1", { deleteTuples: [tuple("doc:1#viewer@user:1")] });
    await store.refresh();
    expect(store.headSnap("t1")).toBe(s2);
    rec.kinds.length = 0;
    expect(store.queryTuples("t1", s2, viewers(["1"]))).toEqual([]);
    expect(keys(store.queryTuples("t1", s1, viewers(["1"])) as never)).toEqual(["doc:1#viewer@user:1"]);
    expect(store.queryTuples("t1", before, viewers(["1"]))).toEqual([]);
    expect(rec.kinds).toEqual([]);
    await store.close();
    await other.close();
  });

  it("the refresh timer picks up other processes' writes, tenants and GC on its own", async () => {
    const file = join(dir, `timer-${n++}.db`);
    const store = await replicaOf(SqliteStore.open(file), { refreshMs: 20 });
    const other = SqliteStore.open(file);
    await store.headSnap("t1");
    await store.queryTuples("t1", await store.headSnap("t1"), viewers(["1"]));
    const s1 = await other.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    const s2 = await other.write("t1", { deleteTuples: [tuple("doc:1#viewer@user:1")] });
    await other.createTenant("b", "B");
    const sb = await other.write("b", { tuples: [tuple("doc:2#viewer@user:2")] });
    await expect.poll(() => store.headSnap("t1"), { timeout: 2000, interval: 10 }).toBe(sb);
    expect(await store.headSnap("b")).toBe(sb);
    expect(keys(await store.queryTuples("b", sb, viewers(["2"])))).toEqual(["doc:2#viewer@user:2"]);
    expect(keys(store.queryTuples("t1", s1, viewers(["1"])) as never)).toEqual(["doc:1#viewer@user:1"]);
    expect(store.queryTuples("t1", s2, viewers(["1"]))).toEqual([]);
    // GC by the other process: the replica refuses the expired snap without asking SQLite
    await other.gc(new Date(Date.now() + 60_000));
    await expect
      .poll(() => errorCode(() => store.assertSnapReadable("t1", s1)), { timeout: 2000 })
      .toBe("ERROR_CODE_SNAP_TOKEN_EXPIRED");
    expect(errorCode(() => store.assertSnapReadable("t1", s2))).toBe("ERROR_CODE_SNAP_TOKEN_EXPIRED");
    expect(errorCode(() => store.assertSnapReadable("t1", sb))).toBe("");
    // a tenant deleted elsewhere disappears; re-created, it starts empty
    await other.deleteTenant("b");
    await other.createTenant("b", "B again");
    await store.refresh();
    expect(await store.queryTuples("b", await store.headSnap("b"), viewers(["2"]))).toEqual([]);
    await store.close();
    await other.close();
  });

  it("no row cap: past its byte budget the working set evicts the least recently used keys, answers stay exact", async () => {
    const file = join(dir, `budget-${n++}.db`);
    const writer = SqliteStore.open(file);
    await writer.write("t1", {
      tuples: Array.from({ length: 300 }, (_, i) => tuple(`doc:${i}#viewer@user:${i % 7}`)),
    });
    await writer.close();
    const rec = recorder();
    // room for about 20 one-row keys
    const store = await replicaOf(SqliteStore.open(file, { onQuery: rec.onQuery }), {
      refreshMs: 0,
      maxBytes: 8000,
    });
    const head = await store.headSnap("t1");
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 300; i++) {
        expect(keys(await store.queryTuples("t1", head, viewers([String(i)])))).toEqual([
          `doc:${i}#viewer@user:${i % 7}`,
        ]);
        expect(store.budget.bytes).toBeLessThanOrEqual(8000);
      }
    }
    const stats = store.stats();
    expect(stats.entries).toBeGreaterThan(10);
    expect(stats.evictions).toBe(900 - stats.entries);
    // a hot key read between others stays (second chance); a cold one is read again
    rec.kinds.length = 0;
    for (let i = 0; i < 100; i++) {
      await store.queryTuples("t1", head, viewers(["hot"]));
      await store.queryTuples("t1", head, viewers([String(i)]));
    }
    expect(rec.kinds.length).toBe(101);
    await store.close();
  });
});

function errorCode(run: () => unknown): string {
  try {
    run();
    return "";
  } catch (e) {
    return (e as { code: string }).code;
  }
}

describe("ReplicaStore over PostgreSQL", () => {
  let server: PostgresServer;
  let admin: pg.Pool;
  let db = 0;
  beforeAll(async () => {
    server = await startPostgres();
    admin = new pg.Pool({ connectionString: server.url, max: 1 });
  }, 60_000);
  afterAll(async () => {
    await admin?.end();
    await server?.stop();
  });
  async function freshUrl(): Promise<string> {
    const name = `pemba_replica_${db++}`;
    await admin.query(`CREATE DATABASE ${name}`);
    return server.url.replace(/\/postgres$/, `/${name}`);
  }

  describeStoreContract("replica over postgres", async () =>
    replicaOf(await PostgresStore.open(await freshUrl())),
  );

  it("two instances on one database: snap tokens give read-your-writes across them; refresh catches up", async () => {
    const url = await freshUrl();
    const recA = recorder();
    const a = await replicaOf(await PostgresStore.open(url, { onQuery: recA.onQuery }));
    const b = await replicaOf(await PostgresStore.open(url));
    const sa = await a.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    const sb = await b.write("t1", { tuples: [tuple("doc:1#viewer@user:2")] });
    expect(sb).toBeGreaterThan(sa);
    // each instance reads its own writes at once (and b's too once b's commit notice has reached it: LISTEN/NOTIFY)
    const headA = await a.headSnap("t1");
    expect(headA).toBeGreaterThanOrEqual(sa);
    expect(keys(await a.queryTuples("t1", headA, viewers(["1"])))).toEqual(
      headA >= sb ? ["doc:1#viewer@user:1", "doc:1#viewer@user:2"] : ["doc:1#viewer@user:1"],
    );
    // instance a given b's token: catches up before answering
    expect(keys(await a.queryTuples("t1", sb, viewers(["1"])))).toEqual([
      "doc:1#viewer@user:1",
      "doc:1#viewer@user:2",
    ]);
    const sc = await b.write("t1", { deleteTuples: [tuple("doc:1#viewer@user:1")] });
    await a.refresh();
    expect(a.headSnap("t1")).toBe(sc);
    recA.kinds.length = 0;
    expect(keys(a.queryTuples("t1", sc, viewers(["1"])) as never)).toEqual(["doc:1#viewer@user:2"]);
    expect(a.assertSnapReadable("t1", sa)).toBeUndefined();
    expect(recA.kinds).toEqual([]);
    await a.close();
    await b.close();
  });

  it("checks of keys not held, arriving together: their reads of missing keys go out as one statement per walk level", async () => {
    const url = await freshUrl();
    const rec = recorder();
    const store = await replicaOf(await PostgresStore.open(url, { onQuery: rec.onQuery }));
    const service = new PembaService(store);
    await service.writeSchema("t1", SCHEMA);
    const docs = Array.from({ length: 8 }, (_, i) => String(i + 1));
    await service.writeData(
      "t1",
      "",
      docs.map((d) => tuple(`doc:${d}#${Number(d) % 2 === 0 ? "owner" : "viewer"}@user:${d}`)),
      [attr("doc:3$public", bool(true))],
    );
    await store.headSnap("t1"); // followed
    const query = (d: string, u: string) => service.check("t1", meta, checkQuery(d, u));
    // 5 checks at once, each of a document whose keys are not held: ONE statement (the walk's one level reads the
    // document's owner and viewer rows and its attribute: 3 keys, one combined read per check)
    const first = docs.slice(0, 5);
    rec.kinds.length = 0;
    const together = await Promise.all(first.map((d) => query(d, Number(d) <= 3 ? d : "9")));
    expect(together.map((r) => r.can)).toEqual([
      "CHECK_RESULT_ALLOWED", // doc:1 viewer user:1
      "CHECK_RESULT_ALLOWED", // doc:2 owner user:2
      "CHECK_RESULT_ALLOWED", // doc:3 public
      "CHECK_RESULT_DENIED",
      "CHECK_RESULT_DENIED",
    ]);
    expect(rec.kinds).toEqual(["query_reads"]);
    expect(store.stats()).toMatchObject({ misses: 15, hits: 0 });
    // every key is now held: no statement, and each check's own rows (not another's of the joined read)
    rec.kinds.length = 0;
    const again = await Promise.all(first.map((d) => query(d, d)));
    expect(again.map((r) => r.can)).toEqual(first.map(() => "CHECK_RESULT_ALLOWED"));
    expect((await query("4", "5")).can).toBe("CHECK_RESULT_DENIED");
    expect(rec.kinds).toEqual([]);
    // one at a time, each cold check is its own statement
    const more = ["9", "10", "11"];
    rec.kinds.length = 0;
    for (const d of more) expect((await query(d, "1")).can).toBe("CHECK_RESULT_DENIED");
    expect(rec.kinds).toEqual(["query_reads", "query_reads", "query_reads"]);
    // more keys than one joined statement reads (16): 8 checks x 3 keys = 24 keys, so two statements (5 + 3 checks)
    rec.kinds.length = 0;
    const many = Array.from({ length: 8 }, (_, i) => String(20 + i));
    await Promise.all(many.map((d) => query(d, "1")));
    expect(rec.kinds).toEqual(["query_reads", "query_reads"]);
    await store.close();
  });

  /** The store without its write notices: its replica hears of other writes only when it asks. */
  const deaf = (store: PostgresStore): Store =>
    new Proxy(store, {
      get: (target, key) => {
        if (key === "onWrite") return undefined;
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });

  /** A write of tenant t1 committed with raw SQL and no notice, as another process's write the copy missed. */
  async function rawWrite(url: string, entity: string): Promise<number> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query("BEGIN");
    const { rows } = await client.query(
      "UPDATE tenants SET head_tx = nextval('pemba_tx_ids') WHERE id = 't1' RETURNING head_tx",
    );
    const id = Number(rows[0].head_tx);
    await client.query("INSERT INTO transactions (id, tenant_id, created_at) VALUES ($1, 't1', 0)", [id]);
    await client.query(
      "INSERT INTO tuples (tenant_id, entity_type, entity_id, relation, subject_type, subject_id, subject_relation, created_tx) VALUES ('t1', 'doc', $1, 'viewer', 'user', '1', '', $2)",
      [entity, id],
    );
    await client.query("COMMIT");
    await client.end();
    return id;
  }

  it("a write reads the feed in its own transaction: no statement after it, and the changes it missed arrive with it", async () => {
    const url = await freshUrl();
    const rec = recorder();
    const store = await replicaOf(deaf(await PostgresStore.open(url, { onQuery: rec.onQuery })));
    const first = await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    // the keys read, filled at `first`
    expect(await store.headSnap("t1")).toBe(first);
    await store.queryTuples("t1", first, viewers(["1", "2", "3"]));
    const missed = await rawWrite(url, "2");
    expect(store.headSnap("t1")).toBe(first);
    rec.kinds.length = 0;
    const snap = await store.write("t1", {
      tuples: [tuple("doc:3#viewer@user:1")],
      deleteTuples: [tuple("doc:1#viewer@user:1")],
    });
    expect(rec.kinds).toEqual(["write"]);
    expect(snap).toBeGreaterThan(missed);
    expect(store.headSnap("t1")).toBe(snap);
    const at = (s: number) => keys(store.queryTuples("t1", s, viewers(["1", "2", "3"])) as never);
    expect(at(snap)).toEqual(["doc:2#viewer@user:1", "doc:3#viewer@user:1"]);
    expect(at(missed)).toEqual(["doc:1#viewer@user:1", "doc:2#viewer@user:1"]);
    expect(at(first)).toEqual(["doc:1#viewer@user:1"]);
    expect(rec.kinds).toEqual(["write"]);
    // the same answers as the database's, at every snap
    const inner = store.inner as Store;
    for (const s of [first, missed, snap]) {
      expect(keys(await inner.queryTuples("t1", s, viewers(["1", "2", "3"])))).toEqual(at(s));
    }
    await store.close();
  });

  it("a write's own notice, heard while it is in flight, reads nothing more", async () => {
    const url = await freshUrl();
    const rec = recorder();
    const inner = await PostgresStore.open(url, { onQuery: rec.onQuery });
    const store = await replicaOf(inner);
    await store.headSnap("t1");
    const heard: number[] = [];
    await inner.onWrite((_, snap) => heard.push(snap));
    const snaps = [await store.write("t1", { tuples: [tuple("doc:0#viewer@user:1")] })];
    for (let i = 0; i < 500 && heard.length < 1; i++) await new Promise((r) => setTimeout(r, 10));
    rec.kinds.length = 0;
    for (let i = 1; i <= 5; i++)
      snaps.push(await store.write("t1", { tuples: [tuple(`doc:${i}#viewer@user:1`)] }));
    for (let i = 0; i < 500 && heard.length < 6; i++) await new Promise((r) => setTimeout(r, 10));
    expect(heard).toEqual(snaps);
    await new Promise((r) => setTimeout(r, 50));
    expect(rec.kinds).toEqual(["write", "write", "write", "write", "write"]);
    expect(store.headSnap("t1")).toBe(snaps[5]);
    await store.close();
  });

  it("concurrent writes of one tenant and of others keep the copy exact at every acknowledged snap", async () => {
    const url = await freshUrl();
    const store = await replicaOf(deaf(await PostgresStore.open(url, { max: 12 })));
    await store.createTenant("t2", "two");
    const acked: [string, string, number][] = [];
    await Promise.all(
      Array.from({ length: 12 }, async (_, w) => {
        const tenant = w < 8 ? "t1" : "t2";
        for (let i = 0; i < 6; i++) {
          const id = `${w}-${i}`;
          acked.push([tenant, id, await store.write(tenant, { tuples: [tuple(`doc:${id}#viewer@user:1`)] })]);
        }
      }),
    );
    const inner = store.inner as Store;
    for (const tenant of ["t1", "t2"]) {
      const mine = acked.filter(([t]) => t === tenant);
      const head = Math.max(...mine.map(([, , s]) => s));
      expect(await store.headSnap(tenant)).toBe(head);
      for (const [, , snap] of mine) {
        const ids = mine.filter(([, , s]) => s <= snap).map(([, id]) => id);
        const expected = ids.map((id) => `doc:${id}#viewer@user:1`).sort();
        expect(keys(await store.queryTuples(tenant, snap, viewers(ids)))).toEqual(expected);
        expect(keys(await inner.queryTuples(tenant, snap, viewers(ids)))).toEqual(expected);
      }
    }
    await store.close();
  });

  it("a write whose feed read finds the GC horizon past the replica drops the tenant's keys; it is followed again", async () => {
    const url = await freshUrl();
    const store = await replicaOf(deaf(await PostgresStore.open(url)));
    await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    await store.queryTuples("t1", await store.headSnap("t1"), viewers(["1", "2", "3"]));
    expect(store.stats().entries).toBe(3);
    // another process: a write the copy misses, deleted again, then a GC past both
    const other = await PostgresStore.open(url);
    await rawWrite(url, "2");
    await other.write("t1", { deleteTuples: [tuple("doc:1#viewer@user:1")] });
    expect(await other.gc(new Date(Date.now() + 60_000))).toBe(1);
    const horizon = await other.gcHorizon();
    await other.close();
    const snap = await store.write("t1", { tuples: [tuple("doc:3#viewer@user:1")] });
    expect(snap).toBeGreaterThan(horizon);
    expect(store.stats()).toMatchObject({ tenants: 0, entries: 0 });
    expect(await store.headSnap("t1")).toBe(snap);
    expect(keys(await store.queryTuples("t1", snap, viewers(["1", "2", "3"])))).toEqual([
      "doc:2#viewer@user:1",
      "doc:3#viewer@user:1",
    ]);
    await store.close();
  });

  it("checks through the service run no SQL statement after warm-up", async () => {
    const rec = recorder();
    const store = await replicaOf(await PostgresStore.open(await freshUrl(), { onQuery: rec.onQuery }));
    const service = new PembaService(store);
    await service.writeSchema("t1", SCHEMA);
    const token = await service.writeData("t1", "", [tuple("doc:1#owner@user:1")], []);
    expect((await service.check("t1", meta, checkQuery("1", "1"))).can).toBe("CHECK_RESULT_ALLOWED");
    // the first request with a token newer than the head schema's read reads the head once more (another
    // process may have written a schema before that token's write)
    await service.check("t1", { ...meta, snapToken: token }, checkQuery("1", "1"));
    rec.kinds.length = 0;
    for (let i = 0; i < 200; i++) {
      const outcome = service.check("t1", meta, checkQuery("1", String(1 + (i % 2))));
      expect(outcome instanceof Promise).toBe(false);
    }
    // with the write's snap token too (no SQL: the replica knows the GC horizon)
    const withToken = await service.check("t1", { ...meta, snapToken: token }, checkQuery("1", "1"));
    expect(withToken.can).toBe("CHECK_RESULT_ALLOWED");
    expect(rec.kinds).toEqual([]);
    expect(encodeSnapToken(store.headSnap("t1") as number)).toBe(token);
    await store.close();
  });
});
