/**
 * Issue 20 §1-2, in process: how long does one schema write hold the event loop, and what does a stream of them
 * leave in memory? A PembaService on a store (`memory:` by default) takes `--writes` distinct schemas of one kind
 * back to back (the kinds of bench-schema-stall.ts: 64 KiB of entities; 8 KiB of CEL + entities to 64 KiB), one
 * kind after the other. Per kind it prints:
 *
 * - the longest event-loop block (perf_hooks monitorEventLoopDelay at 1 ms resolution: how late a 1 ms timer ran)
 *   and its p99, which include the garbage collections' pauses;
 * - the GC pauses (PerformanceObserver "gc": count, sum and max per write);
 * - the process CPU per write (process.cpuUsage);
 * - at the end: RSS, V8's heap (total, used) and its pooled pages, then the same after two full collections, then
 *   after a "last-resort" collection (the one that gives V8's free pages back to the system).
 *
 *   node --experimental-strip-types --no-warnings loadtest/bench-schema-turns.ts [--writes 60] [--kind CEL]
 *     [--database memory:] [--budget-mb 256] [--core <another checkout>]
 *
 * `--core DIR` loads `@pemba/core` from `DIR/packages/core/src` instead (a before/after comparison: an exported
 * tree of the base commit whose node_modules link to this one's).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import v8 from "node:v8";
import { runInNewContext } from "node:vm";

const { values } = parseArgs({
  options: {
    writes: { type: "string", default: "60" },
    /** only the kinds whose label contains this text */
    kind: { type: "string", default: "" },
    database: { type: "string", default: "memory:" },
    "budget-mb": { type: "string", default: "256" },
    core: { type: "string" },
  },
});

type Core = typeof import("@pemba/core");
type Testing = typeof import("@pemba/core/testing");
type NodeEntry = typeof import("@pemba/core/node");
const from = values.core === undefined ? undefined : resolve(values.core, "packages/core/src");
const core = (await (from === undefined ? import("@pemba/core") : import(`${from}/index.ts`))) as Core;
const testing = (await (from === undefined
  ? import("@pemba/core/testing")
  : import(`${from}/testing.ts`))) as Testing;
const nodeEntry = (await (from === undefined
  ? import("@pemba/core/node")
  : import(`${from}/node.ts`))) as NodeEntry;

v8.setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as (options?: object) => void;

const WRITES = Number(values.writes);
const KINDS: [string, (salt: number) => string][] = [
  ["64 KiB of entities", (salt) => testing.entitiesSchema(salt)],
  [
    `${core.MAX_SCHEMA_RULE_CHARS / 1024} KiB of CEL + entities to 64 KiB`,
    (salt) => testing.celHeavySchema(salt, core.MAX_SCHEMA_BYTES),
  ],
];

const dir = mkdtempSync(join(tmpdir(), "pemba-turns-"));
const url = values.database!.replace("{dir}", dir);
const store = await nodeEntry.openStore(url);
const service = new core.PembaService(store, {
  maxCompiledSchemaBytes: Number(values["budget-mb"]) * 1024 * 1024,
});
await service.createTenant("writer", "writer");
await service.writeSchema("writer", "entity user {}");

const gcPauses: number[] = [];
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcPauses.push(entry.duration);
});
observer.observe({ entryTypes: ["gc"] });

const MB = 1024 * 1024;
const memory = () => {
  const m = process.memoryUsage();
  return `RSS ${(m.rss / MB).toFixed(0)} MB, heap total ${(m.heapTotal / MB).toFixed(0)} MB, used ${(m.heapUsed / MB).toFixed(0)} MB`;
};
const ms = (ns: number) => (ns / 1e6).toFixed(1);

let salt = 1000;
let rssMax = 0;
console.log(`database ${values.database}, budget ${values["budget-mb"]} MiB, ${WRITES} writes per kind`);
for (const [label, make] of KINDS.filter(([l]) => l.includes(values.kind!))) {
  for (let i = 0; i < 5; i++) await service.writeSchema("writer", make(salt++)); // warm-up
  const texts = Array.from({ length: WRITES }, () => make(salt++));
  await new Promise((r) => setTimeout(r, 20));
  gcPauses.length = 0;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const cpu = process.cpuUsage();
  const started = performance.now();
  // writes back to back; a 1 ms timer is what another tenant's request would wait behind
  for (const text of texts) {
    await service.writeSchema("writer", text);
    rssMax = Math.max(rssMax, process.memoryUsage.rss());
  }
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  delay.disable();
  await new Promise((r) => setTimeout(r, 50)); // the last GC entries
  const gcSum = gcPauses.reduce((a, b) => a + b, 0);
  console.log(
    `${label}: event-loop block max ${ms(delay.max)} ms, p99 ${ms(delay.percentile(99))} ms, p50 ${ms(delay.percentile(50))} ms; ` +
      `GC pauses ${gcPauses.length} (${(gcSum / WRITES).toFixed(1)} ms per write, max ${Math.max(0, ...gcPauses).toFixed(1)} ms); ` +
      `CPU ${((used.user + used.system) / 1000 / WRITES).toFixed(1)} ms per write; wall ${(wall / WRITES).toFixed(1)} ms per write`,
  );
}
observer.disconnect();
console.log(`memory: max RSS during the writes ${(rssMax / MB).toFixed(0)} MB; at the end: ${memory()}`);
gc();
gc();
console.log(`  after two full collections: ${memory()}`);
gc({ type: "major", execution: "sync", flavor: "last-resort" });
console.log(`  after a last-resort collection: ${memory()}`);
console.log(`  compiled schemas: estimated ${(service.schemas.bytes / MB).toFixed(0)} MiB`);
await store.close?.();
rmSync(dir, { recursive: true, force: true });
