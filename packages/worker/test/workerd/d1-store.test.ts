/** The D1 driver's own behaviour inside workerd, on miniflare's local D1 (real SQLite with D1's limits). */
import { env, applyD1Migrations as wranglerApply } from "cloudflare:test";
import { D1_LIMITS, D1Sessions, D1Store } from "@pemba/core";
import { attr, keys, tuple } from "@pemba/core/testing";
import { beforeEach, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";
import { LaggingReplicaD1 } from "./lagging-replica.ts";

beforeEach(async () => {
  await emptyDatabase(env.DB);
});

const migrationNames = async () =>
  (await env.DB.prepare(`SELECT name FROM d1_migrations ORDER BY id`).all()).results.map((r) => r.name);

describe("D1Store", () => {
  it("runs inside workerd, on a local D1 database that enforces D1's limits", async () => {
    expect(navigator.userAgent).toBe("Cloudflare-Workers");
    const values = (n: number) => `SELECT count(*) AS n FROM (VALUES ${Array(n).fill("(?)").join(", ")})`;
    const ids = (n: number) => Array.from({ length: n }, (_, i) => i);
    expect(
      (
        await env.DB.prepare(values(100))
          .bind(...ids(100))
          .all()
      ).results,
    ).toEqual([{ n: 100 }]);
    await expect(
      env.DB.prepare(values(101))
        .bind(...ids(101))
        .all(),
    ).rejects.toThrow("too many SQL variables");
    await expect(env.DB.prepare(`SELECT 1 /* ${"x".repeat(100_000)} */`).all()).rejects.toThrow(
      "statement too long",
    );
  });

  it("migrates on first use with wrangler's bookkeeping, once", async () => {
    const all = [
      "0000_init.sql",
      "0001_seed.sql",
      "0002_per_tenant_tx_ids.sql",
      "0003_subject_page_index.sql",
      "0004_expiry.sql",
      "0005_partial_expiry_index.sql",
      "0006_drop_subject_page_index.sql",
    ];
    const store = await D1Store.open(env.DB);
    // opening sends nothing: a database nothing migrated has no d1_migrations table yet
    await expect(migrationNames()).rejects.toThrow("no such table: d1_migrations");
    expect(await store.headSnap("t1")).toBe(0);
    expect(await migrationNames()).toEqual(all);
    const snap = await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    const again = await D1Store.open(env.DB);
    expect(await again.headSnap("t1")).toBe(snap);
    expect(await migrationNames()).toEqual(all);
  });

  it("an isolate's start costs no round trip of its own: its first read carries the migration check, at a replica", async () => {
    await emptyDatabase(env.REPLICA);
    const db = new LaggingReplicaD1(env.DB, env.REPLICA);
    const targets = () => {
      const byRequest = new Map<number, string>();
      for (const s of db.log) byRequest.set(s.request, s.target);
      return [...byRequest.values()];
    };
    // a fresh database: the first write looks at the replica (no d1_migrations table), then the primary migrates
    const first = await D1Store.open(db);
    expect(db.log).toEqual([]);
    expect(await first.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] })).toBe(1);
    expect(targets()).toEqual(["replica", "primary", "primary", "primary"]);
    expect(await migrationNames()).toEqual(env.TEST_MIGRATIONS.map((m) => m.name));
    await db.catchUp();

    // a new isolate, the replica up to date: ONE round trip, the check and the read in one batch at the replica
    db.log.length = 0;
    const store = await D1Store.open(db);
    expect(db.log).toEqual([]);
    expect(await store.headSnap("t1")).toBe(1);
    expect(targets()).toEqual(["replica"]);
    expect(db.log[0]!.sql).toBe(`SELECT name FROM "d1_migrations"`);
    expect(db.log).toHaveLength(2);
    // settled: later reads carry no check
    db.log.length = 0;
    expect(await store.headSnap("t1")).toBe(1);
    expect(db.log).toHaveLength(1);
    expect(db.log[0]!.sql).not.toContain("d1_migrations");

    // a replica that lacks the newest migration: the primary is asked (it has them all: nothing applied twice) and
    // the read is sent again, without the check
    await env.REPLICA.prepare(`DELETE FROM d1_migrations WHERE name = '0004_expiry.sql'`).all();
    db.log.length = 0;
    const lagging = await D1Store.open(db);
    expect(await lagging.headSnap("t1")).toBe(1);
    expect(targets()).toEqual(["replica", "primary", "replica"]);
    expect(await migrationNames()).toEqual(env.TEST_MIGRATIONS.map((m) => m.name));
    await emptyDatabase(env.REPLICA);
  });

  it("a migration that fails fails the request with its reason, and the next request tries again", async () => {
    // a table in the way of the first migration's (and no d1_migrations): the migration batch fails as a whole
    await env.DB.prepare(`CREATE TABLE tuples (x)`).all();
    const store = await D1Store.open(env.DB);
    await expect(store.headSnap("t1")).rejects.toMatchObject({
      code: "ERROR_CODE_SQL_EXECUTION",
      details: [{ reason: expect.stringMatching(/^cannot migrate the D1 database: .*already exists/) }],
    });
    await expect(migrationNames()).resolves.toEqual([]);
    await env.DB.prepare(`DROP TABLE tuples`).all();
    expect(await store.headSnap("t1")).toBe(0);
    expect(await migrationNames()).toEqual(env.TEST_MIGRATIONS.map((m) => m.name));
  });

  it("opens a database that `wrangler d1 migrations apply` migrated (drizzle's files as wrangler splits them)", async () => {
    await wranglerApply(env.DB, env.TEST_MIGRATIONS);
    expect(env.TEST_MIGRATIONS.map((m) => m.name)).toEqual([
      "0000_init.sql",
      "0001_seed.sql",
      "0002_per_tenant_tx_ids.sql",
      "0003_subject_page_index.sql",
      "0004_expiry.sql",
      "0005_partial_expiry_index.sql",
      "0006_drop_subject_page_index.sql",
    ]);
    expect(await migrationNames()).toEqual([
      "0000_init.sql",
      "0001_seed.sql",
      "0002_per_tenant_tx_ids.sql",
      "0003_subject_page_index.sql",
      "0004_expiry.sql",
      "0005_partial_expiry_index.sql",
      "0006_drop_subject_page_index.sql",
    ]);
    const store = await D1Store.open(env.DB);
    expect(await migrationNames()).toEqual([
      "0000_init.sql",
      "0001_seed.sql",
      "0002_per_tenant_tx_ids.sql",
      "0003_subject_page_index.sql",
      "0004_expiry.sql",
      "0005_partial_expiry_index.sql",
      "0006_drop_subject_page_index.sql",
    ]);
    expect((await store.getTenant("t1"))?.name).toBe("example tenant");
    expect(await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] })).toBe(1);
  });

  it("a write the database rejects part-way leaves nothing (one batch)", async () => {
    const store = await D1Store.open(env.DB);
    await store.migrate();
    await env.DB.prepare(`CREATE TRIGGER boom BEFORE INSERT ON attributes WHEN NEW.attribute = 'boom'
      BEGIN SELECT RAISE(ABORT, 'boom'); END`).all();
    await expect(
      store.write("t1", {
        tuples: [tuple("doc:1#viewer@user:1")],
        attributes: [attr("doc:1$boom", { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true })],
      }),
    ).rejects.toMatchObject({ code: "ERROR_CODE_SQL_EXECUTION" });
    expect(await store.headSnap("t1")).toBe(0);
    expect((await store.readTuples("t1", 1, {}, 10)).items).toEqual([]);
  });

  it("the tenant check is a statement of the write's batch: a missing tenant fails it, nothing is written", async () => {
    const db = new LaggingReplicaD1(env.DB);
    const store = await D1Store.open(db);
    await store.migrate();
    db.log.length = 0;
    await expect(store.write("nope", { tuples: [tuple("doc:1#viewer@user:1")] })).rejects.toMatchObject({
      code: "ERROR_CODE_TENANT_NOT_FOUND",
    });
    await expect(store.writeSchema("nope", "v1", "entity user {}")).rejects.toMatchObject({
      code: "ERROR_CODE_TENANT_NOT_FOUND",
    });
    expect(new Set(db.log.map((s) => s.request)).size).toBe(2);
    expect(await store.headSnap("t1")).toBe(0);
    expect((await env.DB.prepare("SELECT count(*) AS n FROM transactions").all()).results).toEqual([
      { n: 0 },
    ]);
    expect((await env.DB.prepare("SELECT count(*) AS n FROM schemas").all()).results).toEqual([{ n: 0 }]);
  });

  it("1000 tuples + 1000 attributes are ONE batch request of 7 statements, each within D1's limits", async () => {
    const db = new LaggingReplicaD1(env.DB);
    const store = await D1Store.open(db);
    await store.migrate();
    db.log.length = 0;
    const tuples = Array.from({ length: 1000 }, (_, i) => tuple(`doc:${i}#viewer@user:${i % 37}`));
    const attributes = Array.from({ length: 1000 }, (_, i) =>
      attr(`doc:${i}$rank`, { type: "ATTRIBUTE_TYPE_INTEGER", data: i }),
    );
    const snap = await store.write("t1", { tuples, attributes });
    expect(snap).toBe(1);
    // tenant check, next tx, transaction row, tuple replace (another expiry), tuple insert, attribute supersede,
    // attribute insert
    expect(db.log).toHaveLength(7);
    expect(new Set(db.log.map((s) => s.request)).size).toBe(1);
    for (const s of db.log) {
      expect(s.params.length).toBeLessThanOrEqual(3);
      expect(new TextEncoder().encode(s.sql).length).toBeLessThan(1500);
    }
    const all = await store.readTuples("t1", snap, {}, 0);
    expect(keys(all.items)).toEqual(keys(tuples));
    expect((await store.readAttributes("t1", snap, {}, 0)).items).toHaveLength(1000);
  });

  it("engine reads of 1000 keys stay one statement of at most 100 parameters", async () => {
    const db = new LaggingReplicaD1(env.DB);
    const store = await D1Store.open(db);
    const ids = Array.from({ length: 1000 }, (_, i) => String(i));
    await store.write("t1", {
      tuples: ids.map((id) => tuple(`doc:${id}#viewer@user:${id}`)),
      attributes: ids.map((id) => attr(`doc:${id}$open`, { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true })),
    });
    const sizes: number[] = [];
    for (const n of [1, 9, 10, 15, 16, 1000]) {
      db.log.length = 0;
      const some = ids.slice(0, n);
      const got = await store.queryTuples("t1", 1, [
        { entityType: "doc", entityIds: some, relations: ["viewer"] },
      ]);
      expect(keys(got)).toEqual(keys(some.map((id) => tuple(`doc:${id}#viewer@user:${id}`))));
      const attrs = await store.queryAttributes("t1", 1, [
        { entityType: "doc", entityIds: some, attributes: ["open"] },
        { entityType: "doc", attributes: ["open"] },
      ]);
      expect(attrs).toHaveLength(n + 1000);
      const subjects = await store.querySubjectTuples("t1", 1, [
        {
          subjectType: "user",
          subjectIds: some,
          subjectRelation: "",
          entityType: "doc",
          relations: ["viewer"],
        },
      ]);
      expect(subjects).toHaveLength(n);
      expect(db.log).toHaveLength(3);
      sizes.push(...db.log.map((s) => s.params.length));
    }
    expect(Math.max(...sizes)).toBeLessThanOrEqual(D1_LIMITS.maxParams);
    // [tuples, attributes, subject tuples] per n: key lists of up to 45 values are bound as VALUES (3 per tuple
    // key, 5 per subject key), longer ones as ONE json_each parameter
    expect(sizes).toEqual([7, 13, 9, 31, 37, 49, 34, 40, 5, 49, 55, 5, 5, 11, 5, 5, 11, 5]);
  });

  it("a request stops before D1's 1000 queries per invocation, with a clear error", async () => {
    const store = await D1Store.open(env.DB);
    await store.migrate();
    const sessions = new D1Sessions(env.DB, 3);
    const scoped = await D1Store.open(env.DB, { migrate: false, sessions: () => sessions });
    await scoped.headSnap("t1");
    await scoped.headSnap("t1");
    await expect(scoped.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] })).rejects.toMatchObject({
      code: "ERROR_CODE_SQL_EXECUTION",
      details: [{ reason: "D1 allows at most 3 queries per Worker invocation" }],
    });
    expect(sessions.queries).toBe(2);
    expect(await store.headSnap("t1")).toBe(0);
    expect(new D1Sessions(env.DB).maxQueries).toBe(1000);
  });
});
