/**
 * Writes through the Worker's lazy replica on D1 (miniflare's local D1, inside workerd): each write reads its
 * tenant's change feed in its own batch (D1Store.writeReadingFeed), also while other writes of the tenant are in
 * flight, so a write costs ONE round trip to the primary and the replica is caught up to it without a feed read of
 * its own.
 */
import { env } from "cloudflare:test";
import { D1Store, ReplicaStore, WorkingSetBudget } from "@pemba/core";
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

describe("writes through the lazy replica on D1", () => {
  it("concurrent writes send one batch each and no feed read, and the working set answers at the last write's snap", async () => {
    const kinds: string[] = [];
    const d1 = await D1Store.open(env.DB, { onQuery: (kind) => kinds.push(kind) });
    await d1.createTenant("t", "t");
    const replica = ReplicaStore.lazy(d1, {
      budget: new WorkingSetBudget(16 * 1048576),
      freshnessMs: 60_000,
    });
    const ids = Array.from({ length: 12 }, (_, i) => `d${i}`);
    await replica.write("t", { tuples: [viewer("d0", "first")] });
    const head = await replica.headSnap("t");
    expect(await replica.queryTuples("t", head, viewers(ids), 0)).toHaveLength(1);

    kinds.length = 0;
    const snaps = await Promise.all(
      ids.map((id, i) => replica.write("t", { tuples: [viewer(id, `u${i}`)] })),
    );
    expect(kinds).toEqual(ids.map(() => "write"));
    // a delete is a write too
    const deleted = await replica.write("t", { deleteTuples: [viewer("d0", "first")] });
    expect(kinds).toHaveLength(ids.length + 1);
    expect(kinds.every((k) => k === "write")).toBe(true);

    kinds.length = 0;
    const last = Math.max(...snaps, deleted);
    expect(await replica.headSnap("t")).toBe(last);
    const rows = await replica.queryTuples("t", last, viewers(ids), 0);
    expect(kinds).toEqual([]);
    expect(pairs(rows)).toEqual(ids.map((id, i) => `${id}@u${i}`).sort());
    // the store itself agrees
    expect(pairs(await d1.queryTuples("t", last, viewers(ids), 0))).toEqual(pairs(rows));
  });
});
