/**
 * The change sets a fill holds (freshness.ts: startFill / endFill): a read of missing keys in flight collects the
 * change sets applied to its tenant until it ends, and applies them to the entries it files. Under a steady load
 * fills overlap without pause (some read is always in flight), so no set may be kept longer than the fills that
 * started before it.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../memory/memory-store.ts";
import { tuple } from "../../testing/fixtures.ts";
import { type Fill, TenantFreshness, type TenantState } from "./freshness.ts";
import { tupleGroup, WorkingSetBudget } from "./working-set.ts";

const viewers = (ids: string[]) => [{ entityType: "doc", entityIds: ids, relations: ["viewer"] }];
const held = (st: TenantState) => [...st.fills].reduce((n, f) => n + f.sets.length, 0);

async function followed() {
  const store = new MemoryStore();
  await store.createTenant("t", "t");
  const budget = new WorkingSetBudget(1 << 20);
  const freshness = new TenantFreshness(store, budget, {});
  const st = await freshness.track("t");
  if (st === undefined) throw new Error("tenant not followed");
  return { store, freshness, st, budget };
}

describe("fills' change sets", () => {
  it("fills that always overlap hold only the sets applied during their own lifetimes", async () => {
    const { store, freshness, st } = await followed();
    let previous = freshness.startFill(st, st.caughtUp)!;
    const maxHeld: number[] = [];
    for (let i = 0; i < 200; i++) {
      const snap = await store.write("t", { tuples: [tuple(`doc:${i}#viewer@user:u${i}`)] });
      await freshness.catchUp(st, snap, true);
      // the next fill starts before the previous one ends: st.fills is never empty
      const next = freshness.startFill(st, st.caughtUp)!;
      expect(next).toBeDefined();
      expect(previous.sets.map((s) => s.snap)).toEqual([snap]);
      freshness.endFill(st, previous, new Map());
      previous = next;
      maxHeld.push(held(st));
    }
    expect(st.fills.size).toBe(1);
    // each write's set is held by the one fill that started before it, until that fill ends
    expect(Math.max(...maxHeld)).toBe(0);
    expect(previous.sets).toEqual([]);
  });

  it("a fill files its entries with the changes applied while its read was in flight", async () => {
    const { store, freshness, st } = await followed();
    const before = st.caughtUp;
    const fill: Fill = freshness.startFill(st, before)!;
    // the read of doc:1's viewers answers at `before`: no row yet
    const rows = await store.queryTuples("t", before, viewers(["1"]), 0);
    expect(rows).toEqual([]);
    // meanwhile a write adds one, and the tenant catches up; a second fill starts after it
    const snap = await store.write("t", { tuples: [tuple("doc:1#viewer@user:a")] });
    await freshness.catchUp(st, snap, true);
    const later = freshness.startFill(st, st.caughtUp)!;
    expect(fill.sets.map((s) => s.snap)).toEqual([snap]);
    expect(later.sets).toEqual([]);
    const missing = viewers(["1"]);
    freshness.endFill(st, fill, st.keys.tupleEntries(missing, rows, before));
    expect(st.fills.size).toBe(1);
    // the entry filed holds the row written during the read: answered from memory at the caught-up snap
    const split = st.keys.splitTuples(missing, st.caughtUp);
    expect(split.missing).toBeUndefined();
    const answer = st.keys.answerTuples(missing, split, st.caughtUp, 0);
    expect(answer.map((t) => `${t.entity.id}@${t.subject.id}`)).toEqual(["1@a"]);
    freshness.endFill(st, later, undefined);
    expect(st.fills.size).toBe(0);
  });

  it("a fill ending leaves the entries already filed as the feed made them, and the budget counts every byte", async () => {
    const { store, freshness, st, budget } = await followed();
    // doc:1's viewers are filed first (no rows), then a read of doc:2 starts
    const one = viewers(["1"]);
    freshness.endFill(st, freshness.startFill(st, st.caughtUp)!, st.keys.tupleEntries(one, [], st.caughtUp));
    const before = st.caughtUp;
    const fill = freshness.startFill(st, before)!;
    const two = viewers(["2"]);
    const rows = await store.queryTuples("t", before, two, 0);
    // while it is in flight, writes touch both keys: the filed doc:1 gets them from the feed
    const snaps: number[] = [];
    for (const who of ["a", "b", "c"]) {
      const snap = await store.write("t", {
        tuples: [tuple(`doc:1#viewer@user:${who}`), tuple(`doc:2#viewer@user:${who}`)],
      });
      await freshness.catchUp(st, snap, true);
      snaps.push(snap);
    }
    expect(fill.sets.map((s) => s.snap)).toEqual(snaps);
    freshness.endFill(st, fill, st.keys.tupleEntries(two, rows, before));
    // one live row per write, and nothing else (no dead second copy of a row from the fill's sets)
    const [s1, s2, s3] = snaps;
    const expected = [
      ["a", s1, Number.POSITIVE_INFINITY],
      ["b", s2, Number.POSITIVE_INFINITY],
      ["c", s3, Number.POSITIVE_INFINITY],
    ];
    const viewersOf = (id: string) => st.keys.tuples.get(tupleGroup("doc", "viewer"))!.get(id)!;
    expect(viewersOf("1").rows.map((r) => [r.v.subject.id, r.c, r.d])).toEqual(expected);
    expect(viewersOf("2").rows.map((r) => [r.v.subject.id, r.c, r.d])).toEqual(expected);
    expect(st.keys.rowCount()).toBe(6);
    // the budget counts exactly the bytes of the entries filed
    let bytes = 0;
    for (const kind of ["tuples", "subjects", "attributes"] as const) {
      for (const ids of st.keys[kind].values()) for (const e of ids.values()) bytes += e.bytes;
    }
    expect(budget.bytes).toBe(bytes);
    const answer = st.keys.answerTuples(one, st.keys.splitTuples(one, st.caughtUp), st.caughtUp, 0);
    expect(answer.map((t) => t.subject.id).sort()).toEqual(["a", "b", "c"]);
  });
});
