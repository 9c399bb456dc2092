import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { describeStoreContract } from "../contract/index.ts";
import { sqliteDialect } from "../sql/dialect.ts";
import { readTuplesStatement } from "../sql/read-plan.ts";
import { attr, tuple } from "../testing/fixtures.ts";
import { LOCK_WAIT_MS, SqliteStore } from "./sqlite.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-sqlite-"));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeStoreContract("sqlite", async () => SqliteStore.open(join(dir, `contract-${n++}.db`)));

describe("SqliteStore", () => {
  it("engine reads answer synchronously and data survives reopening the file", async () => {
    const file = `sqlite://${join(dir, "reopen.db")}`;
    const kinds: string[] = [];
    const store = SqliteStore.open(file, { onQuery: (kind) => kinds.push(kind) });
    const snap = await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    const got = store.queryTuples("t1", snap, [
      { entityType: "doc", entityIds: ["1"], relations: ["viewer"] },
    ]);
    expect(Array.isArray(got)).toBe(true);
    expect(store.headSnap("t1")).toBe(snap);
    expect(kinds).toEqual(["write", "query_tuples", "head_snap"]);
    await store.close();
    const again = SqliteStore.open(file);
    expect(again.headSnap("t1")).toBe(snap);
    expect((await again.getTenant("t1"))?.name).toBe("example tenant");
    expect(
      again.queryTuples("t1", snap, [{ entityType: "doc", entityIds: ["1"], relations: ["viewer"] }]),
    ).toEqual([tuple("doc:1#viewer@user:1")]);
    await again.close();
  });

  it("migration 0005: the expiry indexes hold only expiring rows, the sweep still searches them, and the sweep and nextExpiry answer as before", async () => {
    const file = join(dir, "partial-expiry.db");
    const store = SqliteStore.open(file);
    const at = Date.UTC(2030, 0, 1);
    await store.write("t1", {
      tuples: [tuple("doc:1#viewer@user:1"), { ...tuple("doc:2#viewer@user:1"), expiresAt: at + 1000 }],
      attributes: [
        { ...attr("doc:1$a", { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true }), expiresAt: at + 2000 },
      ],
    });
    const raw = new Database(file);
    for (const table of ["tuples", "attributes"]) {
      const { sql } = raw
        .prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?")
        .get(`${table}_expires_idx`) as { sql: string };
      expect(sql).toBe(
        `CREATE INDEX \`${table}_expires_idx\` ON \`${table}\` (\`tenant_id\`,\`expires_at\`) WHERE "${table}"."expires_at" is not null`,
      );
      // the sweep's condition (expires_at <= ?) implies the index's: SQLite searches it
      const plan = raw
        .prepare(
          `EXPLAIN QUERY PLAN UPDATE ${table} SET deleted_tx = 1 WHERE tenant_id = ? AND deleted_tx IS NULL AND expires_at <= ?`,
        )
        .all("t1", at) as { detail: string }[];
      expect(plan.map((p) => p.detail).join(" ")).toContain(`USING INDEX ${table}_expires_idx`);
    }
    raw.close();
    expect(await store.nextExpiry("t1")).toBe(at + 1000);
    const swept = await store.write("t1", { expireUpTo: at + 1500 });
    expect((await store.readTuples("t1", swept, {}, 10, undefined, 0)).items).toEqual([
      tuple("doc:1#viewer@user:1"),
    ]);
    expect(await store.nextExpiry("t1")).toBe(at + 2000);
    await store.close();
  });

  it("tuples have one subject index (migration 0006 dropped the page index); a subject page reads by it", async () => {
    const file = join(dir, "indexes.db");
    const store = SqliteStore.open(file);
    await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1"), tuple("doc:2#viewer@user:1")] });
    const raw = new Database(file);
    const names = raw
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tuples' AND sql IS NOT NULL",
      )
      .all()
      .map((r) => (r as { name: string }).name)
      .sort();
    expect(names).toEqual([
      "tuples_created_idx",
      "tuples_deleted_idx",
      "tuples_entity_idx",
      "tuples_expires_idx",
      "tuples_live_unique",
      "tuples_subject_idx",
    ]);
    // both halves of a page filtered by subject seek the subject's rows, then sort them by id under the LIMIT
    const page = readTuplesStatement(
      sqliteDialect,
      "t1",
      9,
      0,
      { subject: { type: "user", ids: ["1"] } },
      0,
      50,
    );
    const plan = (
      raw.prepare(`EXPLAIN QUERY PLAN ${page.sql}`).all(...page.params) as { detail: string }[]
    ).map((p) => p.detail);
    const seeks = plan.filter((d) =>
      d.includes("USING INDEX tuples_subject_idx (tenant_id=? AND subject_type=? AND subject_id=?)"),
    );
    expect(seeks).toHaveLength(2);
    raw.close();
    expect(
      (
        await store.readTuples(
          "t1",
          store.headSnap("t1"),
          { subject: { type: "user", ids: ["1"] } },
          1,
          undefined,
          0,
        )
      ).items,
    ).toEqual([tuple("doc:1#viewer@user:1")]);
    await store.close();
  });

  it("a write the database rejects part-way leaves nothing (one real transaction)", async () => {
    const file = join(dir, "atomic.db");
    const store = SqliteStore.open(file);
    const raw = new Database(file);
    raw.exec(`CREATE TRIGGER boom BEFORE INSERT ON attributes WHEN NEW.attribute = 'boom'
      BEGIN SELECT RAISE(ABORT, 'boom'); END;`);
    raw.close();
    const head = store.headSnap("t1");
    await expect(
      store.write("t1", {
        tuples: [tuple("doc:1#viewer@user:1")],
        attributes: [attr("doc:1$boom", { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true })],
      }),
    ).rejects.toMatchObject({ code: "ERROR_CODE_SQL_EXECUTION" });
    expect(store.headSnap("t1")).toBe(head);
    expect((await store.readTuples("t1", head + 1, {}, 10)).items).toEqual([]);
    await store.close();
  });

  it("a write waiting for another connection's lock does not block the event loop, then succeeds", async () => {
    const file = join(dir, "locked.db");
    const store = SqliteStore.open(file);
    const other = new Database(file);
    other.exec("BEGIN IMMEDIATE"); // holds the write lock
    let written = false;
    const write = store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] }).then((snap) => {
      written = true;
      return snap;
    });
    // timers keep firing while the write waits (a synchronous busy wait would hold them for 5 s)
    let ticks = 0;
    while (ticks < 20) {
      await new Promise((r) => setTimeout(r, 10));
      ticks++;
    }
    expect(written).toBe(false);
    other.exec("COMMIT");
    const snap = await write;
    expect(store.headSnap("t1")).toBe(snap);
    // reads go on while another connection holds the write lock (WAL)
    other.exec("BEGIN IMMEDIATE");
    expect(
      store.queryTuples("t1", snap, [{ entityType: "doc", entityIds: ["1"], relations: ["viewer"] }]),
    ).toEqual([tuple("doc:1#viewer@user:1")]);
    other.exec("ROLLBACK");
    other.close();
    await store.close();
  });

  it(`a write still locked out after ${LOCK_WAIT_MS} ms fails with ERROR_CODE_SQL_EXECUTION and writes nothing`, async () => {
    const file = join(dir, "locked-long.db");
    const store = SqliteStore.open(file);
    const head = store.headSnap("t1");
    const other = new Database(file);
    other.exec("BEGIN IMMEDIATE");
    let ticks = 0;
    const timer = setInterval(() => ticks++, 50);
    await expect(store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] })).rejects.toMatchObject({
      code: "ERROR_CODE_SQL_EXECUTION",
      details: [{ reason: "database is locked" }],
    });
    clearInterval(timer);
    // the event loop ran all along: about LOCK_WAIT_MS / 50 ticks (generous bound)
    expect(ticks).toBeGreaterThan(LOCK_WAIT_MS / 50 / 4);
    other.exec("ROLLBACK");
    other.close();
    expect(store.headSnap("t1")).toBe(head);
    await store.close();
  }, 20_000);
});
