/**
 * PEMBA_D1_SIMULATE's wrapper (src/d1-around.ts) around a real local D1 database: which D1 instance each round trip
 * would reach on Cloudflare (D1's routing rules), and that background work's round trips wait a timer turn.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { aroundD1, type SimulatedTrip, simulatedD1, yieldingInBackground } from "../../src/d1-around.ts";

const lagOf = (lagMs: number) => {
  const trips: SimulatedTrip[] = [];
  const db = aroundD1(
    env.DB,
    simulatedD1({ replicaMs: 0, primaryMs: 0, lagMinMs: lagMs, lagMaxMs: lagMs, failWrites: 0 }, (t) =>
      trips.push(t),
    ),
  );
  return { db, at: () => trips.map((t) => t.at) };
};

describe("simulated D1 latency around the binding", () => {
  it("routes as D1 does: unconstrained reads at a replica, first-primary and the bare binding at the primary, a write moves its session to the primary", async () => {
    const { db, at } = lagOf(0);
    await db.withSession("first-unconstrained").prepare("SELECT 1").all();
    await db.withSession().prepare("SELECT 1").all();
    await db.withSession("first-primary").prepare("SELECT 1").all();
    await db.prepare("SELECT 1").all();
    const session = db.withSession("first-unconstrained");
    await session.prepare("SELECT 1").all();
    await session.batch([session.prepare("CREATE TABLE IF NOT EXISTS sim_t (x INTEGER)")]);
    await session.prepare("SELECT 1").all();
    expect(at()).toEqual(["replica", "replica", "primary", "primary", "replica", "primary", "primary"]);
  });

  it("a session from a write's bookmark reads at the primary until the write's lag has passed, then at a replica", async () => {
    for (const [lagMs, expected] of [
      [3_600_000, "primary"],
      [0, "replica"],
    ] as const) {
      const { db, at } = lagOf(lagMs);
      const writer = db.withSession("first-primary");
      await writer.prepare("CREATE TABLE IF NOT EXISTS sim_t (x INTEGER)").all();
      const bookmark = writer.getBookmark();
      expect(bookmark).not.toBeNull();
      await db.withSession(bookmark!).prepare("SELECT 1").all();
      expect(at()).toEqual(["primary", expected]);
    }
  });

  it("waits each round trip's latency before it runs, and answers what the database answers", async () => {
    const waited: number[] = [];
    const realSetTimeout = globalThis.setTimeout;
    const db = aroundD1(
      env.DB,
      simulatedD1({ replicaMs: 3, primaryMs: 100, lagMinMs: 0, lagMaxMs: 0, failWrites: 0 }),
    );
    globalThis.setTimeout = ((fn: () => void, ms: number) => {
      waited.push(ms);
      return realSetTimeout(fn, 0);
    }) as typeof setTimeout;
    try {
      const { results } = await db.withSession("first-unconstrained").prepare("SELECT 7 AS x").all();
      expect(results).toEqual([{ x: 7 }]);
      await db.withSession("first-primary").batch([db.prepare("SELECT 1"), db.prepare("SELECT 2")]);
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
    expect(waited).toEqual([3, 100]);
  });

  it("background work's round trips wait a timer turn first; a request's do not", async () => {
    let background = false;
    const turns: number[] = [];
    const realSetTimeout = globalThis.setTimeout;
    const db = aroundD1(
      env.DB,
      yieldingInBackground(() => background),
    );
    globalThis.setTimeout = ((fn: () => void, ms: number) => {
      turns.push(ms);
      return realSetTimeout(fn, 0);
    }) as typeof setTimeout;
    try {
      await db.prepare("SELECT 1").all();
      background = true;
      await db.prepare("SELECT 1").all();
      await db.withSession().batch([db.prepare("SELECT 1")]);
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
    expect(turns).toEqual([0, 0]);
  });
});
