/**
 * The working-set replica equals the store at every snap (replicaProperty, @pemba/core/testing), inside workerd on
 * local D1, as the Worker builds it: ReplicaStore.lazy over a D1Store, looks handed to background work, and a budget so small that keys are evicted all the time. Random writes (some by "another
 * isolate", straight to the store), deletes, expiry, GC and schema changes; every check, lookup and engine read at
 * a random snap compared with the store's answer.
 */
import { env } from "cloudflare:test";
import { D1Sessions, D1Store, ReplicaStore, WorkingSetBudget } from "@pemba/core";
import { replicaProperty } from "@pemba/core/testing";
import { beforeEach, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";

beforeEach(async () => {
  await emptyDatabase(env.DB);
});

/** Room for a few dozen keys: most fills evict. */
const MAX_BYTES = 6000;

describe("working-set replica = D1 store, at random snaps (workerd)", () => {
  for (const [freshnessMs, seed] of [
    [60_000, 31],
    [0, 32],
  ] as const) {
    it(`freshness window ${freshnessMs} ms, seed ${seed}`, async () => {
      // one set of sessions for the run (its queries are many requests' worth: no per-invocation cap)
      const sessions = new D1Sessions(env.DB, Number.POSITIVE_INFINITY);
      const inner = await D1Store.open(env.DB, { sessions: () => sessions });
      const budget = new WorkingSetBudget(MAX_BYTES);
      const pending: Promise<unknown>[] = [];
      const replica = ReplicaStore.lazy(inner, {
        budget,
        freshnessMs,
        // the Worker's ctx.waitUntil: the look runs after the answer, beside the next steps
        background: (start) => pending.push(start()),
      });
      const counts = await replicaProperty({
        inner,
        replica,
        seed,
        steps: 100,
        evictions: () => budget.evictions,
      });
      expect(budget.bytes).toBeLessThanOrEqual(MAX_BYTES);
      expect(counts.checks).toBeGreaterThan(100);
      expect(counts.reads).toBeGreaterThan(20);
      expect(counts.gcs + counts.sweeps + counts.schemas).toBeGreaterThan(0);
      expect(counts.evictions).toBeGreaterThan(0);
      await Promise.all(pending.splice(0));
      await replica.close();
    }, 120_000);
  }
});
