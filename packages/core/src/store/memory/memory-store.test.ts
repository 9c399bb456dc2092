import { describe, expect, it } from "vitest";
import { describeStoreContract } from "../contract/index.ts";
import { attr, keys, tuple } from "../testing/fixtures.ts";
import { MemoryStore } from "./memory-store.ts";

describeStoreContract("memory", async () => new MemoryStore());
describeStoreContract("memory, every index hash colliding", async () => new MemoryStore({ hashMask: 0 }));

describe("MemoryStore engine reads", () => {
  it("answer synchronously with plain values", async () => {
    const store = new MemoryStore();
    const snap = await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    const got = store.queryTuples("t1", snap, [
      { entityType: "doc", entityIds: ["1"], relations: ["viewer"] },
    ]);
    expect(Array.isArray(got)).toBe(true);
    expect(got).toHaveLength(1);
    expect(store.headSnap("t1")).toBe(snap);
    expect(store.assertSnapReadable("t1", snap)).toBeUndefined();
    expect(store.listObjectIds("t1", snap, "user")).toEqual(["1"]);
  });
});

describe("MemoryStore as a replica (applyChangeSet)", () => {
  it("fed by another store's change feed, answers every snap like the source", async () => {
    const source = new MemoryStore();
    await source.createTenant("t2", "second");
    const bool = (data: boolean) => ({ type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data });
    const s1 = await source.write("t1", {
      tuples: [tuple("doc:1#viewer@user:1"), tuple("doc:1#viewer@user:2")],
      attributes: [attr("doc:1$public", bool(false))],
    });
    const s2 = await source.write("t2", { tuples: [tuple("doc:9#viewer@user:9")] });
    const s3 = await source.write("t1", {
      deleteTuples: [tuple("doc:1#viewer@user:1")],
      attributes: [attr("doc:1$public", bool(true))],
    });
    const replica = new MemoryStore();
    for (const tenant of ["t1", "t2"])
      for (const set of await source.changes(tenant, 0, 100)) replica.applyChangeSet(tenant, set);
    expect(replica.headSnap("t1")).toBe(s3);
    const q = [{ entityType: "doc", entityIds: ["1", "9"], relations: ["viewer"] }];
    const aq = [{ entityType: "doc", entityIds: ["1"], attributes: ["public"] }];
    for (const snap of [s1, s2, s3]) {
      for (const tenant of ["t1", "t2"]) {
        expect(keys(replica.queryTuples(tenant, snap, q))).toEqual(keys(source.queryTuples(tenant, snap, q)));
        expect(replica.queryAttributes(tenant, snap, aq)).toEqual(source.queryAttributes(tenant, snap, aq));
        expect(await replica.changes(tenant, 0, 100)).toEqual(await source.changes(tenant, 0, 100));
      }
    }
    expect(keys(replica.queryTuples("t1", s3, q))).toEqual(["doc:1#viewer@user:2"]);
    expect(() => replica.applyChangeSet("t1", { snap: s1, changes: [] })).toThrow(/not after/);
  });
});
