import { describe, expect, it } from "vitest";
import { parseTupleString } from "../schema/index.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import type { WatchBatch } from "./watch.ts";
import { WatchHub } from "./watch.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A MemoryStore that counts `changes` reads. */
function countingStore(): MemoryStore & { reads: number } {
  const store = new MemoryStore() as MemoryStore & { reads: number };
  store.reads = 0;
  const changes = store.changes.bind(store);
  store.changes = (...args) => {
    store.reads++;
    return changes(...args);
  };
  return store;
}

describe("WatchHub", () => {
  it("300 idle streams of one tenant share one poll per interval, and all get the next change", async () => {
    const store = countingStore();
    const hub = new WatchHub(store);
    const head = store.headSnap("t1");
    const abort = new AbortController();
    const streams = Array.from({ length: 300 }, () =>
      hub.open("t1", head, { signal: abort.signal, pollMs: 10 }),
    );
    const next = streams.map((s) => s.next());
    await sleep(200);
    // each stream's first read, then ~20 shared polls (one per 10 ms), not 300 per interval
    expect(store.reads).toBeGreaterThanOrEqual(300 + 5);
    expect(store.reads).toBeLessThan(300 + 60);
    const beforeWrite = store.reads;
    await store.write("t1", { tuples: [parseTupleString("doc:1#owner@user:1")], attributes: [] });
    const batches = (await Promise.all(next)).map((r) => r.value as WatchBatch);
    expect(batches.every((b) => b.changes.length === 1 && b.changes[0].tuple?.entity.id === "1")).toBe(true);
    // one read per stream for the change, plus a few polls
    expect(store.reads - beforeWrite).toBeLessThan(300 + 40);
    expect(hub.streams).toBe(300);
    abort.abort();
    for (const s of streams) await s.return(undefined);
    expect(hub.streams).toBe(0);
    await sleep(30);
    const afterClose = store.reads;
    await sleep(100);
    expect(store.reads).toBe(afterClose); // no poller left running
  });

  it("a stream behind the others catches up from its own position", async () => {
    const store = countingStore();
    const hub = new WatchHub(store);
    const start = store.headSnap("t1");
    await store.write("t1", { tuples: [parseTupleString("doc:1#owner@user:1")], attributes: [] });
    const abort = new AbortController();
    const current = hub.open("t1", store.headSnap("t1"), { signal: abort.signal, pollMs: 5 });
    const behind = hub.open("t1", start, { signal: abort.signal, pollMs: 5 });
    const first = await behind.next();
    expect((first.value as WatchBatch).changes[0].tuple?.entity.id).toBe("1");
    const pending = [current.next(), behind.next()];
    await sleep(20);
    await store.write("t1", { tuples: [parseTupleString("doc:2#owner@user:1")], attributes: [] });
    for (const r of await Promise.all(pending))
      expect((r.value as WatchBatch).changes[0].tuple?.entity.id).toBe("2");
    abort.abort();
  });

  it("refuses a stream over maxStreams with RATE_LIMITED, and accepts one again after a stream closes", async () => {
    const hub = new WatchHub(new MemoryStore(), { maxStreams: 2 });
    const a = new AbortController();
    const b = new AbortController();
    hub.open("t1", 0, { signal: a.signal });
    hub.open("t2", 0, { signal: b.signal });
    expect(() => hub.open("t1", 0)).toThrow(
      expect.objectContaining({
        code: "ERROR_CODE_RATE_LIMITED",
        grpcCode: 8,
        httpStatus: 429,
        message: "too many watch streams (limit 2)",
      }),
    );
    // a stream never read from is released by its signal
    a.abort();
    expect(hub.streams).toBe(1);
    const c = new AbortController();
    hub.open("t1", 0, { signal: c.signal });
    expect(hub.streams).toBe(2);
    b.abort();
    c.abort();
    expect(hub.streams).toBe(0);
  });

  it("close ends every open stream, and streams opened afterwards end at once", async () => {
    const store = new MemoryStore();
    const hub = new WatchHub(store);
    const streams = [hub.open("t1", 0, { pollMs: 5 }), hub.open("t2", 0, { pollMs: 5 })];
    const next = streams.map((s) => s.next());
    await sleep(20);
    hub.close();
    expect(await Promise.all(next)).toEqual([
      { done: true, value: undefined },
      { done: true, value: undefined },
    ]);
    expect(hub.streams).toBe(0);
    const late = hub.open("t1", 0, { pollMs: 5 });
    expect(await late.next()).toEqual({ done: true, value: undefined });
    expect(hub.streams).toBe(0);
  });
});
