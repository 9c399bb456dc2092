import v8 from "node:v8";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createHeapCompactor, type HeapCompactor, limitHeapGrowth } from "../src/heap.ts";

const MB = 1048576;
/** The compactor's idle timer on a fake clock: the test says when time passes, so a loaded machine cannot fire it early. */
const sleep = (ms: number) => vi.advanceTimersByTime(ms);

describe("heap compaction after bulk writes", () => {
  let compactor: HeapCompactor | undefined;
  beforeEach(() => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] }));
  afterEach(() => {
    compactor?.close();
    vi.useRealTimers();
  });

  function start(minBytes: number, idleMs: number) {
    const logged: { fields: Record<string, number>; message: string }[] = [];
    compactor = createHeapCompactor({
      minBytes,
      idleMs,
      log: (fields, message) => logged.push({ fields: fields as Record<string, number>, message }),
    });
    return { compactor, logged };
  }

  it("runs once the writes pause, and returns the garbage of the load to the system", async () => {
    const { compactor, logged } = start(4 * MB, 50);
    // a bulk load's leftovers: ~60 MB of promoted garbage
    let garbage: unknown[] | undefined = Array.from({ length: 600 }, (_, i) =>
      Array.from({ length: 2000 }, (_, j) => ({ i, j, s: `id-${i}-${j}` })),
    );
    compactor.noteWrite(3 * MB);
    sleep(100);
    expect(logged).toEqual([]); // below the threshold
    compactor.noteWrite(2 * MB);
    sleep(20);
    compactor.noteWrite(1); // the load goes on: the pause starts again
    sleep(30);
    expect(logged).toEqual([]);
    garbage = undefined;
    sleep(100);
    expect(garbage).toBeUndefined();
    expect(logged).toHaveLength(1);
    const { fields, message } = logged[0]!;
    expect(message).toBe("heap compacted after bulk writes");
    expect(fields.writeMB).toBe(5);
    expect(fields.ms).toBeGreaterThanOrEqual(0);
    expect(fields.rssAfterMB).toBeLessThan(fields.rssBeforeMB!);
    sleep(100);
    expect(logged).toHaveLength(1); // once per load
  });

  it("a load without pauses is compacted every twice the threshold", async () => {
    const { compactor, logged } = start(MB, 10_000);
    compactor.noteWrite(MB);
    sleep(20);
    expect(logged).toEqual([]);
    compactor.noteWrite(MB);
    sleep(20);
    expect(logged.map((l) => l.fields.writeMB)).toEqual([2]);
  });

  it("0 disables it; bodies of unknown size do not count", async () => {
    const off = start(0, 1);
    off.compactor.noteWrite(100 * MB);
    off.compactor.close();
    const on = start(MB, 1);
    on.compactor.noteWrite(Number.NaN);
    on.compactor.noteWrite(Number(undefined));
    sleep(30);
    expect(off.logged).toEqual([]);
    expect(on.logged).toEqual([]);
  });
});

describe("the old space's growth past the live heap", () => {
  afterEach(() => vi.restoreAllMocks());

  it("sets V8's heap growing percent; 0 leaves V8's own rule", () => {
    const set = vi.spyOn(v8, "setFlagsFromString").mockImplementation(() => {});
    limitHeapGrowth(30);
    expect(set.mock.calls).toEqual([["--heap-growing-percent=30"]]);
    limitHeapGrowth(0);
    expect(set.mock.calls).toEqual([["--heap-growing-percent=30"]]);
  });
});
