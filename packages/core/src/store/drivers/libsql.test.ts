import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { afterAll, describe, expect, it } from "vitest";
import { describeStoreContract } from "../contract/index.ts";
import { attr, tuple } from "../testing/fixtures.ts";
import { LibsqlStore } from "./libsql.ts";
import { SqliteStore } from "./sqlite.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-libsql-"));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeStoreContract("libsql", () => LibsqlStore.open(`file:${join(dir, `contract-${n++}.db`)}`));

describe("LibsqlStore", () => {
  it("reports statement kinds and keeps data across reopening", async () => {
    const url = `file:${join(dir, "reopen.db")}`;
    const kinds: string[] = [];
    const store = await LibsqlStore.open(url, { onQuery: (kind) => kinds.push(kind) });
    const snap = await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    expect(await store.headSnap("t1")).toBe(snap);
    expect(kinds).toEqual(["write", "head_snap"]);
    await store.close();
    const again = await LibsqlStore.open(url);
    expect(
      await again.queryTuples("t1", snap, [{ entityType: "doc", entityIds: ["1"], relations: ["viewer"] }]),
    ).toEqual([tuple("doc:1#viewer@user:1")]);
    await again.close();
  });

  it("a write the database rejects part-way leaves nothing (one real transaction)", async () => {
    const url = `file:${join(dir, "atomic.db")}`;
    const store = await LibsqlStore.open(url);
    const raw = createClient({ url });
    await raw.execute(`CREATE TRIGGER boom BEFORE INSERT ON attributes WHEN NEW.attribute = 'boom'
      BEGIN SELECT RAISE(ABORT, 'boom'); END`);
    raw.close();
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

  it("shares drizzle's migration bookkeeping with SqliteStore, both ways", async () => {
    const first = join(dir, "sqlite-first.db");
    const a = SqliteStore.open(first);
    const snap = await a.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    await a.close();
    const b = await LibsqlStore.open(`file:${first}`);
    expect(await b.headSnap("t1")).toBe(snap);
    await b.close();

    const second = join(dir, "libsql-first.db");
    const c = await LibsqlStore.open(`file:${second}`);
    const snap2 = await c.write("t1", { tuples: [tuple("doc:2#viewer@user:2")] });
    await c.close();
    const d = SqliteStore.open(second);
    expect(d.headSnap("t1")).toBe(snap2);
    expect((await d.getTenant("t1"))?.name).toBe("example tenant");
    await d.close();
  });
});
