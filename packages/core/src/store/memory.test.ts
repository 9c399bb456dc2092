import { describe, expect, it } from "vitest";
import { describeStoreContract } from "./contract.ts";
import { MemoryStore } from "./memory.ts";
import { tuple } from "./testing/fixtures.ts";

describeStoreContract("memory", async () => new MemoryStore());

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
