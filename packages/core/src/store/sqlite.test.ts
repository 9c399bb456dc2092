import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { describeStoreContract } from "./contract.ts";
import { SqliteStore } from "./sqlite.ts";
import { attr, tuple } from "./testing/fixtures.ts";

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
});
