import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { describeStoreContract } from "../contract/index.ts";
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
