/**
 * A node `--import` preload for a server under a benchmark: each SIGUSR2 toggles V8's sampling heap profiler,
 * including the objects the minor and major GCs collected (so it shows what a request allocates, not only what
 * stays), and counts the GC pauses over the same span. The second signal of a pair writes
 * `<HEAP_SAMPLE_DIR>/window<n>.heapprofile` (Chrome DevTools' format; loadtest/heap-summary.ts reads it) and
 * `window<n>.gc.json` (GC pauses by kind: count and milliseconds).
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { join } from "node:path";
import { constants, PerformanceObserver } from "node:perf_hooks";

const dir = process.env.HEAP_SAMPLE_DIR;
const interval = Number(process.env.HEAP_SAMPLE_INTERVAL ?? "4096");
/** HEAP_SAMPLE_LIVE=1: only what is still alive when the window ends (what a window's calls leave behind). */
const live = process.env.HEAP_SAMPLE_LIVE === "1";
const KINDS = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
};
if (dir !== undefined) {
  const session = new Session();
  session.connect();
  let sampling = false;
  let window = 0;
  let gc = {};
  const observer = new PerformanceObserver((list) => {
    if (!sampling) return;
    for (const entry of list.getEntries()) {
      const kind = KINDS[entry.detail?.kind] ?? String(entry.detail?.kind);
      if (gc[kind] === undefined) gc[kind] = { count: 0, ms: 0 };
      const g = gc[kind];
      g.count++;
      g.ms += entry.duration;
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  process.on("SIGUSR2", () => {
    if (!sampling) {
      session.post("HeapProfiler.startSampling", {
        samplingInterval: interval,
        includeObjectsCollectedByMajorGC: !live,
        includeObjectsCollectedByMinorGC: !live,
      });
      gc = {};
      sampling = true;
      return;
    }
    sampling = false;
    window++;
    session.post("HeapProfiler.stopSampling", (error, result) => {
      if (error) throw error;
      writeFileSync(join(dir, `window${window}.heapprofile`), JSON.stringify(result.profile));
      writeFileSync(join(dir, `window${window}.gc.json`), JSON.stringify(gc));
    });
  });
}
