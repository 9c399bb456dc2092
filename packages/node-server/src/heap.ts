/**
 * Gives the memory of a bulk load back to the system once the load is over.
 *
 * Write requests carry large bodies (Permify's seed writer: 800 requests of 1,000 rows, ~88 MB of JSON); what they
 * allocate lives across the request's awaits (SQL write, replica catch-up), so V8 promotes it and the old space grows
 * to several times the live data. V8 only returns those pages when its memory reducer decides the process is idle,
 * which a server answering checks never is. So after at least `minBytes` of write bodies, once no write body has
 * arrived for `idleMs`, one full collection that releases free pages runs (V8's "last resort" flavour; a log line says
 * how long it took and what it freed). A bulk load that never pauses is compacted every `2 * minBytes`.
 */

import { executionAsyncResource } from "node:async_hooks";
import v8 from "node:v8";
import { runInNewContext } from "node:vm";

let keptTickObject: object | undefined;

/**
 * Keeps one of Node's nextTick objects alive for the life of the process, so the hidden classes ("maps") of those
 * objects live as long as the code that builds them.
 *
 * `process.nextTick` builds each tick object with a literal of computed symbol keys. V8 records, per key, the map the
 * object had before the key was added; those maps are held only weakly. A full collection that runs while no tick
 * object is alive (the compaction below runs from a timer, when the queue is empty) frees them, and the next tick
 * object gets new maps. V8 then marks those keys megamorphic for good: every later nextTick, 4-5 per HTTP request in
 * node's streams, adds its properties through the runtime (CPU on every request, none before the first full
 * collection). One object that is never freed keeps the maps, and the keys stay monomorphic. Call it at startup, before
 * any full collection.
 */
export function keepTickObjectShape(): void {
  if (keptTickObject !== undefined) return;
  // inside a nextTick callback, the current async resource is that callback's tick object
  process.nextTick(() => {
    keptTickObject = executionAsyncResource();
  });
}

/**
 * Memory the server takes per estimated byte of the working set's entries while it is full and evicting, so
 * `--replica-memory` bounds the RSS the working set adds (its entries hold at most the budget divided by this).
 *
 * At rest the entries' estimate matches the heap they hold (loadtest/working-set-memory.ts); a working set that
 * evicts does not stay at rest. Evicted entries die in the old space at random places, so the old space holds, beside
 * the live entries, the garbage V8 lets it grow by before a full collection (`--heap-growth`, 30 % by default) and
 * the holes of pages still partly in use, which a full collection frees but does not give back (V8 compacts only
 * pages that are mostly empty). Measured at the default `--heap-growth` over Permify's dataset at 20 M rows (a Zipf
 * check load evicting 3,000 keys a second; loadtest/RESULTS.md): the RSS over the baseline's was 1.5x the entries'
 * estimate after 2 minutes of eviction and still creeping; 2 leaves room for that.
 */
export const MEMORY_PER_ESTIMATED_BYTE = 2;

/**
 * Bounds how far V8 lets its old space grow past the live heap before a full collection (V8's
 * `--heap-growing-percent`, read at each collection, so it holds from the next one on).
 *
 * Under a load without pauses (hundreds of requests in flight, each living across SQL round trips), V8 promotes
 * much of each request's garbage and, by its own rule, raises the old space's limit toward several times the live
 * heap; it gives the pages back only when it finds the process idle. A 600-client soak on PostgreSQL took the RSS to
 * 600 MB in 4 minutes and on to 912 MB over 30 (live heap about 200 MB); at 30 % it held at about 300 MB, answering
 * as many requests. 0 leaves V8's rule as it is.
 */
export function limitHeapGrowth(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${Math.floor(percent)}`);
}

export interface HeapCompactorOptions {
  /** Write-body bytes since the last compaction before one is considered; 0 disables. */
  minBytes: number;
  /** Quiet time after the last write body before compacting. */
  idleMs: number;
  log(fields: object, message: string): void;
}

export interface HeapCompactor {
  /** Counts a write request's body bytes. */
  noteWrite(bytes: number): void;
  close(): void;
}

type FullGc = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;

let cachedGc: FullGc | undefined;
/** V8's gc() without starting node with --expose-gc: the flag is honoured by contexts created after it is set. */
function fullGc(): FullGc {
  if (cachedGc === undefined) {
    v8.setFlagsFromString("--expose-gc");
    cachedGc = runInNewContext("gc") as FullGc;
  }
  return cachedGc;
}

export function createHeapCompactor(options: HeapCompactorOptions): HeapCompactor {
  let pending = 0;
  let timer: NodeJS.Timeout | undefined;
  const compact = () => {
    timer = undefined;
    const bytes = pending;
    pending = 0;
    const before = process.memoryUsage.rss();
    const started = performance.now();
    fullGc()({ type: "major", execution: "sync", flavor: "last-resort" });
    const after = process.memoryUsage.rss();
    options.log(
      {
        writeMB: Math.round(bytes / 1048576),
        ms: Math.round(performance.now() - started),
        rssBeforeMB: Math.round(before / 1048576),
        rssAfterMB: Math.round(after / 1048576),
      },
      "heap compacted after bulk writes",
    );
  };
  return {
    noteWrite(bytes) {
      if (options.minBytes <= 0 || !(bytes > 0)) return;
      pending += bytes;
      if (pending < options.minBytes) return;
      // Re-armed by every write, so it fires once the writes have stopped for idleMs; a load without pauses is
      // compacted right after this request's handler has run.
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(compact, pending >= 2 * options.minBytes ? 0 : options.idleMs);
      timer.unref();
    },
    close() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
