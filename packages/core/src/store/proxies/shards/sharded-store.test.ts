/**
 * ShardedStore over three real SQLite files (the Worker runs it on D1: test/workerd/d1-shards.test.ts): tenant list
 * pages across databases for every page size, create and delete span them, deleteEmptyTenant deletes only a tenant
 * holding nothing, and a tenant missing on its database follows from another only when empty.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { PembaError } from "../../../errors.ts";
import { describeStoreContract } from "../../contract/index.ts";
import { SqliteStore } from "../../drivers/sqlite.ts";
import { attr, tuple } from "../../testing/fixtures.ts";
import { ReplicaStore } from "../replica/index.ts";
import { rendezvous, TenantPlacement } from "./placement.ts";
import { ShardedStore } from "./sharded-store.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-shards-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DBS = ["DB", "DB2", "DB3"];
let n = 0;
const open: SqliteStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

/** Three fresh databases behind a ShardedStore with these pins (the same files when `files` is given). */
function sharded(pins: Record<string, string> = {}, files = DBS.map(() => join(dir, `db-${n++}.db`))) {
  const stores = files.map((f) => SqliteStore.open(f));
  open.push(...stores);
  const placement = new TenantPlacement({ databases: DBS, pinned: new Map(Object.entries(pins)) });
  const store = new ShardedStore(
    DBS.map((name, i) => ({ name, store: stores[i]! })),
    placement,
    { pinSetting: "PINS" },
  );
  return { store, files, byName: new Map(DBS.map((name, i) => [name, stores[i]!])) };
}

const nameOn = (db: string, prefix: string) => {
  for (let i = 0; ; i++) if (rendezvous(DBS, `${prefix}${i}`) === db) return `${prefix}${i}`;
};

// every call of the Store contract (expiry included) through the routing, tenants spread over the three files:
// bare, and as the Worker wires it (createPemba's withReplica: a lazy replica in front of each database)
const contractStore = () =>
  new ShardedStore(
    DBS.map((name) => ({ name, store: SqliteStore.open(join(dir, `contract-${n++}.db`)) })),
    new TenantPlacement({ databases: DBS }),
  );
describeStoreContract("sharded over three sqlite files", async () => contractStore());
describeStoreContract("sharded, a lazy replica in front of each sqlite file", async () =>
  contractStore().withEach((store) => ReplicaStore.lazy(store, { freshnessMs: 0 })),
);

describe("ShardedStore", () => {
  it("lists tenants of all databases in id order, for every page size, each once", async () => {
    const { store, byName } = sharded();
    const ids = Array.from({ length: 23 }, (_, i) => `t-${String(i).padStart(2, "0")}`);
    for (const id of ids) await store.createTenant(id, id);
    // every database holds some, and each its seed tenant "t1"
    for (const s of byName.values()) expect((await s.listTenants(0)).items.length).toBeGreaterThan(1);
    const all = [...ids, "t1"].sort();
    expect((await store.listTenants(0)).items.map((t) => t.id)).toEqual(all);
    for (let size = 1; size <= all.length + 1; size++) {
      const pages: string[] = [];
      let cursor: string | undefined;
      let count = 0;
      do {
        const page = await store.listTenants(size, cursor);
        expect(page.items.length).toBeLessThanOrEqual(size);
        pages.push(...page.items.map((t) => t.id));
        cursor = page.cursor || undefined;
        count++;
      } while (cursor);
      expect(pages, `page size ${size}`).toEqual(all);
      expect(count).toBe(Math.ceil(all.length / size));
    }
  });

  it("create refuses a tenant on any database; delete removes it wherever it is", async () => {
    const { store, byName } = sharded();
    const id = nameOn("DB2", "x");
    await byName.get("DB3")!.createTenant(id, "elsewhere");
    await expect(store.createTenant(id, "again")).rejects.toThrow(new PembaError("ERROR_CODE_ALREADY_EXIST"));
    expect(await byName.get("DB2")!.getTenant(id)).toBeUndefined();
    expect((await store.deleteTenant(id))?.name).toBe("elsewhere");
    expect(await byName.get("DB3")!.getTenant(id)).toBeUndefined();
    expect(await store.deleteTenant(id)).toBeUndefined();
    // "t1" is seeded on each: one delete removes all three
    expect((await store.deleteTenant("t1"))?.id).toBe("t1");
    for (const s of byName.values()) expect(await s.getTenant("t1")).toBeUndefined();
  });

  it("deleteEmptyTenant deletes a tenant only while it holds no schema, bundle, tuple or attribute", async () => {
    const db = SqliteStore.open(join(dir, `db-${n++}.db`));
    open.push(db);
    const fill: [string, (id: string) => Promise<unknown>][] = [
      ["schema", (id) => db.writeSchema(id, "v1", "entity user {}")],
      ["bundle", (id) => db.writeBundles(id, [{ name: "b", arguments: [], operations: [] }])],
      ["tuple", (id) => db.write(id, { tuples: [tuple("doc:1#viewer@user:1")] })],
      [
        "attribute",
        (id) =>
          db.write(id, {
            attributes: [attr("doc:1$public", { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true })],
          }),
      ],
      [
        "deleted tuple",
        async (id) => {
          await db.write(id, { tuples: [tuple("doc:1#viewer@user:1")] });
          await db.write(id, { deleteTupleFilters: [{ entity: { type: "doc", ids: ["1"] } }] });
        },
      ],
    ];
    for (const [what, write] of fill) {
      await db.createTenant(what, what);
      await write(what);
      expect(await db.deleteEmptyTenant(what), what).toEqual({ notEmpty: true });
      expect(await db.getTenant(what), what).toBeDefined();
    }
    await db.createTenant("empty", "Empty");
    expect(await db.deleteEmptyTenant("empty")).toMatchObject({ deleted: { id: "empty", name: "Empty" } });
    expect(await db.getTenant("empty")).toBeUndefined();
    expect(await db.deleteEmptyTenant("empty")).toBeUndefined();
  });

  it("a tenant missing on its database follows from another when empty, else stays with an error", async () => {
    const empty = nameOn("DB", "e");
    const full = nameOn("DB", "f");
    const first = sharded();
    await first.store.createTenant(empty, "Empty");
    await first.store.createTenant(full, "Full");
    await first.store.write(full, { tuples: [tuple("doc:1#viewer@user:1")] });
    // pinned elsewhere: the same files, a new placement
    const moved = sharded({ [empty]: "DB3", [full]: "DB3" }, first.files);
    expect((await moved.store.getTenant(empty))?.name).toBe("Empty");
    expect(await moved.byName.get("DB")!.getTenant(empty)).toBeUndefined();
    expect(await moved.byName.get("DB3")!.getTenant(empty)).toBeDefined();
    await expect(moved.store.write(full, { tuples: [tuple("doc:2#viewer@user:1")] })).rejects.toThrow(
      `tenant ${full} holds data on database DB, but its placement is now DB3: a tenant with data does not move; pin it where its data is (${full}=DB in PINS)`,
    );
    expect(await moved.byName.get("DB3")!.getTenant(full)).toBeUndefined();
    expect(await moved.byName.get("DB")!.getTenant(full)).toBeDefined();
    // a tenant on no database is simply missing
    expect(await moved.store.getTenant("nobody")).toBeUndefined();
    await expect(moved.store.write("nobody", { tuples: [tuple("doc:1#viewer@user:1")] })).rejects.toThrow(
      new PembaError("ERROR_CODE_TENANT_NOT_FOUND"),
    );
  });

  it("snap tokens name every database but the first; bookmarks and reads go to the tenant's database", async () => {
    const { store, byName } = sharded();
    const onFirst = nameOn("DB", "a");
    const onThird = nameOn("DB3", "c");
    expect(store.snapDatabase(onFirst)).toBeUndefined();
    expect(store.snapDatabase(onThird)).toBe("DB3");
    await store.createTenant(onThird, onThird);
    const snap = await store.write(onThird, { tuples: [tuple("doc:1#viewer@user:1")] });
    expect(await byName.get("DB3")!.headSnap(onThird)).toBe(snap);
    expect(
      store.queryTuples(onThird, snap, [{ entityType: "doc", entityIds: ["1"], relations: ["viewer"] }]),
    ).toHaveLength(1);
    expect(await store.gc(new Date())).toBe(0);
  });
});
