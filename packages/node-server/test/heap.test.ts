import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { createHeapCompactor, type HeapCompactor } from "../src/heap.ts";

const MB = 1048576;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("heap compaction after bulk writes", () => {
  let compactor: HeapCompactor | undefined;
  afterEach(() => compactor?.close());

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
    await sleep(100);
    expect(logged).toEqual([]); // below the threshold
    compactor.noteWrite(2 * MB);
    await sleep(20);
    compactor.noteWrite(1); // the load goes on: the pause starts again
    await sleep(30);
    expect(logged).toEqual([]);
    garbage = undefined;
    await sleep(100);
    expect(garbage).toBeUndefined();
    expect(logged).toHaveLength(1);
    const { fields, message } = logged[0]!;
    expect(message).toBe("heap compacted after bulk writes");
    expect(fields.writeMB).toBe(5);
    expect(fields.ms).toBeGreaterThanOrEqual(0);
    expect(fields.rssAfterMB).toBeLessThan(fields.rssBeforeMB!);
    await sleep(100);
    expect(logged).toHaveLength(1); // once per load
  });

  it("a load without pauses is compacted every twice the threshold", async () => {
    const { compactor, logged } = start(MB, 10_000);
    compactor.noteWrite(MB);
    await sleep(20);
    expect(logged).toEqual([]);
    compactor.noteWrite(MB);
    await sleep(20);
    expect(logged.map((l) => l.fields.writeMB)).toEqual([2]);
  });

  it("0 disables it; bodies of unknown size do not count", async () => {
    const off = start(0, 1);
    off.compactor.noteWrite(100 * MB);
    off.compactor.close();
    const on = start(MB, 1);
    on.compactor.noteWrite(Number.NaN);
    on.compactor.noteWrite(Number(undefined));
    await sleep(30);
    expect(off.logged).toEqual([]);
    expect(on.logged).toEqual([]);
  });
});

describe("keepTickObjectShape", () => {
  // A child process: V8's object printer (natives syntax) shows the state of nextTick's feedback.
  const HEAP_TS = new URL("../src/heap.ts", import.meta.url).href;
  function literalStates(keep: boolean): string[] {
    const script = `
      import { keepTickObjectShape } from ${JSON.stringify(HEAP_TS)};
      if (${keep}) keepTickObjectShape();
      const ticks = async () => { for (let i = 0; i < 1000; i++) await new Promise((r) => process.nextTick(r, i)); };
      await ticks();
      gc({ type: "major", execution: "sync" }); // no tick object is queued here
      await ticks();
      %DebugPrint(process.nextTick);`;
    const child = spawnSync(
      process.execPath,
      ["--allow-natives-syntax", "--expose-gc", "--experimental-strip-types", "--no-warnings"].concat([
        "--input-type=module",
        "-e",
        script,
      ]),
      { encoding: "utf8" },
    );
    expect(child.status).toBe(0);
    return [...child.stdout.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]!);
  }

  it("without it, a full collection leaves the tick object's keys megamorphic (what it prevents)", () => {
    const states = literalStates(false);
    expect(states).toHaveLength(5); // async id, trigger id, context frame, callback, args
    expect(states.filter((s) => s === "MEGAMORPHIC").length).toBeGreaterThanOrEqual(1);
  });

  it("with it, every key of the tick object stays monomorphic", () => {
    expect(literalStates(true)).toEqual(Array(5).fill("MONOMORPHIC"));
  });
});
