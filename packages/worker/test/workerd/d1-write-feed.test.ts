/**
 * Writes through the Worker's lazy replica on D1 (miniflare's local D1, inside workerd): a write reads its tenant's
 * change feed in its own batch (D1Store.writeReadingFeed) also while a few other writes of the tenant are in flight
 * (up to MAX_FEED_READING_WRITES), so it costs ONE round trip to the primary and the replica is caught up to it
 * without a feed read of its own. Past that many, the feed each would read grows with the writes ahead of it: those
 * writes share a catch-up after them instead.
 */
import { env } from "cloudflare:test";
import { D1Store, MAX_FEED_READING_WRITES, ReplicaStore, WorkingSetBudget } from "@pemba/core";
import { beforeEach, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";

beforeEach(async () => {
  await emptyDatabase(env.DB);
});

const viewers = (ids: string[]) => [{ entityType: "doc", entityIds: ids, relations: ["viewer"] }];
const viewer = (doc: string, user: string) => ({
  entity: { type: "doc", id: doc },
  relation: "viewer",
  subject: { type: "user", id: user, relation: "" },
});
const pairs = (rows: { entity: { id: string }; subject: { id: string } }[]) =>
  rows.map((t) => `${t.entity.id}@${t.subject.id}`).sort();

async function followed() {
  const kinds: string[] = [];
  const d1 = await D1Store.open(env.DB, { onQuery: (kind) => kinds.push(kind) });
  await d1.createTenant("t", "t");
  const replica = ReplicaStore.lazy(d1, { budget: new WorkingSetBudget(16 * 1048576), freshnessMs: 60_000 });
  await replica.write("t", { tuples: [viewer("d0", "first")] });
  return { kinds, d1, replica };
}

describe("writes through the lazy replica on D1", () => {
  it(`up to ${MAX_FEED_READING_WRITES} concurrent writes send one batch each and no feed read; the working set answers at the last write's snap`, async () => {
    const { kinds, d1, replica } = await followed();
    const ids = Array.from({ length: MAX_FEED_READING_WRITES }, (_, i) => `d${i}`);
    const head = await replica.headSnap("t");
    expect(await replica.queryTuples("t", head, viewers(ids), 0)).toHaveLength(1);

    kinds.length = 0;
    const snaps = await Promise.all(
      ids.map((id, i) => replica.write("t", { tuples: [viewer(id, `u${i}`)] })),
    );
    expect(kinds).toEqual(ids.map(() => "write"));
    // a delete is a write too
    const deleted = await replica.write("t", { deleteTuples: [viewer("d0", "first")] });
    expect(kinds).toEqual([...ids.map(() => "write"), "write"]);

    kinds.length = 0;
    const last = Math.max(...snaps, deleted);
    expect(await replica.headSnap("t")).toBe(last);
    const rows = await replica.queryTuples("t", last, viewers(ids), 0);
    expect(kinds).toEqual([]);
    expect(pairs(rows)).toEqual(ids.map((id, i) => `${id}@u${i}`).sort());
    expect(pairs(await d1.queryTuples("t", last, viewers(ids), 0))).toEqual(pairs(rows));
  });

  it("past that many, the later writes read no feed of their own and share catch-ups; every answer stays right", async () => {
    const { kinds, d1, replica } = await followed();
    const ids = Array.from({ length: 3 * MAX_FEED_READING_WRITES }, (_, i) => `d${i}`);
    await replica.queryTuples("t", await replica.headSnap("t"), viewers(ids), 0);

    kinds.length = 0;
    const snaps = await Promise.all(
      ids.map((id, i) => replica.write("t", { tuples: [viewer(id, `u${i}`)] })),
    );
    expect(kinds.filter((k) => k === "write")).toHaveLength(ids.length);
    // the writes past the bound: catch-ups after them, fewer than one per write
    const catchUps = kinds.filter((k) => k === "changes").length;
    expect(catchUps).toBeGreaterThan(0);
    expect(catchUps).toBeLessThan(ids.length - MAX_FEED_READING_WRITES);

    kinds.length = 0;
    const last = Math.max(...snaps);
    const rows = await replica.queryTuples("t", last, viewers(ids), 0);
    expect(kinds).toEqual([]);
    expect(pairs(rows)).toEqual(pairs(await d1.queryTuples("t", last, viewers(ids), 0)));
    expect(rows).toHaveLength(ids.length + 1);
  });
});
