/**
 * A held key's view (working-set.ts: `viewOf`): a read of one held key answers the entry's records as one shared,
 * frozen array instead of a copy per read. Kept only while it is what every later read sees; a write, a delete, an
 * expiring row or a read at an older snap token never sees a stale one.
 */
import { describe, expect, it } from "vitest";
import type { Attribute, Tuple } from "../../../model.ts";
import { MemoryStore } from "../../memory/memory-store.ts";
import type { Snap } from "../../store.ts";
import { attr, keys, tuple } from "../../testing/fixtures.ts";
import { ReplicaStore, WorkingSetBudget } from "./index.ts";

const viewers = (ids: string[]) => [{ entityType: "doc", entityIds: ids, relations: ["viewer"] }];
const publicOf = (id: string) => [{ entityType: "doc", entityIds: [id], attributes: ["public"] }];
const subjectReads = (id: string) => [
  { entityType: "doc", relations: ["viewer"], subjectType: "user", subjectIds: [id], subjectRelation: "" },
];
const bool = (data: boolean) => ({ type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data });
const T0 = 1_000_000;

async function setUp() {
  const inner = new MemoryStore();
  const budget = new WorkingSetBudget(1 << 20);
  const replica = await ReplicaStore.open(inner, { refreshMs: 0, budget });
  const write = async (w: Parameters<MemoryStore["write"]>[1]): Promise<Snap> => replica.write("t1", w);
  const read = async (snap: Snap, ids: string[], at = T0) =>
    replica.queryTuples("t1", snap, viewers(ids), at);
  return { inner, replica, budget, write, read };
}

describe("a held key's view", () => {
  it("is one frozen array for every read at the same or a later snap, until the key changes", async () => {
    const { replica, write, read } = await setUp();
    const s1 = await write({ tuples: [tuple("doc:1#viewer@user:a")] });
    await read(s1, ["1"]); // fills the key
    const first = await read(s1, ["1"]);
    expect(keys(first)).toEqual(["doc:1#viewer@user:a"]);
    expect(await read(s1, ["1"])).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(() => (first as Tuple[]).push(tuple("doc:1#viewer@user:x"))).toThrow(TypeError);
    // another key's write leaves it as it is
    const s2 = await write({ tuples: [tuple("doc:2#viewer@user:b")] });
    expect(await read(s2, ["1"])).toBe(first);
    await replica.close();
  });

  it("a write or a delete of the key gives later reads the new rows; reads at older snap tokens the old ones", async () => {
    const { replica, write, read } = await setUp();
    const s1 = await write({ tuples: [tuple("doc:1#viewer@user:a")] });
    await read(s1, ["1"]);
    const atS1 = await read(s1, ["1"]);
    const s2 = await write({ tuples: [tuple("doc:1#viewer@user:b")] });
    const atS2 = await read(s2, ["1"]);
    expect(keys(atS2)).toEqual(["doc:1#viewer@user:a", "doc:1#viewer@user:b"]);
    expect(await read(s2, ["1"])).toBe(atS2);
    // a token older than the write
    expect(keys(await read(s1, ["1"]))).toEqual(["doc:1#viewer@user:a"]);
    expect(keys(atS1)).toEqual(["doc:1#viewer@user:a"]);
    const s3 = await write({ deleteTuples: [tuple("doc:1#viewer@user:a")] });
    expect(keys(await read(s3, ["1"]))).toEqual(["doc:1#viewer@user:b"]);
    expect(keys(await read(s2, ["1"]))).toEqual(["doc:1#viewer@user:a", "doc:1#viewer@user:b"]);
    expect(keys(await read(s1, ["1"]))).toEqual(["doc:1#viewer@user:a"]);
    // the newest snap again, after reads at older ones
    const atS3 = await read(s3, ["1"]);
    expect(keys(atS3)).toEqual(["doc:1#viewer@user:b"]);
    const s4 = await write({ deleteTuples: [tuple("doc:1#viewer@user:b")] });
    expect(await read(s4, ["1"])).toEqual([]);
    expect(keys(await read(s3, ["1"]))).toEqual(["doc:1#viewer@user:b"]);
    expect(keys(atS3)).toEqual(["doc:1#viewer@user:b"]);
    await replica.close();
  });

  it("rows with an expiry are filtered by each read's evaluation time, never kept", async () => {
    const { replica, write, read } = await setUp();
    const s1 = await write({
      tuples: [{ ...tuple("doc:1#viewer@user:a"), expiresAt: T0 + 1000 }, tuple("doc:1#viewer@user:b")],
    });
    await read(s1, ["1"]);
    const both = ["doc:1#viewer@user:a", "doc:1#viewer@user:b"];
    expect(keys(await read(s1, ["1"], T0))).toEqual(both);
    expect(keys(await read(s1, ["1"], T0 + 1000))).toEqual(["doc:1#viewer@user:b"]);
    expect(keys(await read(s1, ["1"], T0 + 999))).toEqual(both);
    expect(await read(s1, ["1"], T0)).not.toBe(await read(s1, ["1"], T0));
    // the expiring row deleted: the rest is kept again
    const s2 = await write({ deleteTuples: [tuple("doc:1#viewer@user:a")] });
    const rest = await read(s2, ["1"], T0);
    expect(keys(rest)).toEqual(["doc:1#viewer@user:b"]);
    expect(await read(s2, ["1"], T0 + 5000)).toBe(rest);
    expect(keys(await read(s1, ["1"], T0))).toEqual(both);
    await replica.close();
  });

  it("reads of several keys, subject reads and attribute reads see the same rows", async () => {
    const { replica, write, read } = await setUp();
    const s1 = await write({
      tuples: [tuple("doc:1#viewer@user:a"), tuple("doc:2#viewer@user:a")],
      attributes: [attr("doc:1$public", bool(true))],
    });
    const publicAt = async (snap: Snap) =>
      (await replica.queryAttributes("t1", snap, publicOf("1"), T0)).map((a: Attribute) => a.value.data);
    const subjectsAt = async (snap: Snap) =>
      keys(await replica.querySubjectTuples("t1", snap, subjectReads("a"), T0));
    await read(s1, ["1", "2"]);
    await publicAt(s1);
    await subjectsAt(s1);
    expect(keys(await read(s1, ["1"]))).toEqual(["doc:1#viewer@user:a"]);
    expect(keys(await read(s1, ["1", "2"]))).toEqual(["doc:1#viewer@user:a", "doc:2#viewer@user:a"]);
    expect(await publicAt(s1)).toEqual([true]);
    const attributes = await replica.queryAttributes("t1", s1, publicOf("1"), T0);
    expect(await replica.queryAttributes("t1", s1, publicOf("1"), T0)).toBe(attributes);
    expect(await subjectsAt(s1)).toEqual(["doc:1#viewer@user:a", "doc:2#viewer@user:a"]);
    const s2 = await write({
      attributes: [attr("doc:1$public", bool(false))],
      deleteTuples: [tuple("doc:2#viewer@user:a")],
    });
    expect(await publicAt(s2)).toEqual([false]);
    expect(await publicAt(s1)).toEqual([true]);
    expect(await subjectsAt(s2)).toEqual(["doc:1#viewer@user:a"]);
    expect(await subjectsAt(s1)).toEqual(["doc:1#viewer@user:a", "doc:2#viewer@user:a"]);
    expect(keys(await read(s2, ["1", "2"]))).toEqual(["doc:1#viewer@user:a"]);
    await replica.close();
  });

  it("a kept view's bytes count in the budget and are uncounted when the key changes", async () => {
    const { replica, budget, write, read } = await setUp();
    const s1 = await write({ tuples: [tuple("doc:1#viewer@user:a")] });
    await read(s1, ["1"]);
    const filled = budget.bytes;
    await read(s1, ["1"]);
    // one record: the array (48 bytes) and its element (8)
    expect(budget.bytes).toBe(filled + 56);
    await read(s1, ["1"]);
    expect(budget.bytes).toBe(filled + 56);
    await write({ deleteTuples: [tuple("doc:1#viewer@user:a")] });
    // the view is dropped; the deleted row stays until GC
    expect(budget.bytes).toBe(filled);
    await replica.close();
  });
});
