/**
 * In process: how long does one schema write hold the event loop, and what does a stream of them
 * leave in memory? A PembaService on a store (`memory:` by default) takes `--writes` distinct schemas of one kind
 * back to back (the kinds of bench-schema-stall.ts: 64 KiB of entities; 8 KiB of CEL + entities to 64 KiB), one
 * kind after the other. Per kind it prints:
 *
 * - the longest event-loop block (perf_hooks monitorEventLoopDelay at 1 ms resolution: how late a 1 ms timer ran)
 *   and its p99, which include the garbage collections' pauses, and on a shared machine the time the process
 *   waited for a core;
 * - the longest loop iteration by the main thread's CPU time (a setImmediate ticker reads
 *   process.threadCpuUsage() at each iteration): the same turns without the waits for a core, so it holds on a
 *   loaded machine; GC pauses count as far as the main thread works in them;
 * - the GC pauses (PerformanceObserver "gc": count, sum and max per write);
 * - the process CPU per write (process.cpuUsage);
 * - at the end: RSS and V8's heap (total, used); with --idle-seconds, the same every 5 s without work (V8's
 *   memory reducer gives free pages back once the process looks idle); then after two full collections, then after
 *   a "last-resort" collection (the one that also gives V8's pooled free pages back to the system).
 *
 *   node --experimental-strip-types --no-warnings loadtest/bench-schema-turns.ts [--writes 60] [--kind CEL]
 *     [--database memory:] [--budget-mb 256] [--idle-seconds 0] [--core <another checkout>] [--parse-thread]
 *
 * `--parse-thread`: the service parses on a SchemaParseWorker (`pemba serve`'s wiring) instead of the event loop.
 *
 * `--core DIR` loads `@pemba/core` from `DIR/packages/core/src` instead (a before/after comparison: an exported
 * tree of the base commit whose node_modules link to this one's).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { monitorEventLoopDelay, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks";
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
    "parse-thread": { type: "boolean", default: false },
    /** seconds of quiet after the writes before the memory is read (V8's memory reducer may run meanwhile) */
    "idle-seconds": { type: "string", default: "0" },
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
const schemaParser = values["parse-thread"] ? new nodeEntry.SchemaParseWorker() : undefined;
const service = new core.PembaService(store, {
  maxCompiledSchemaBytes: Number(values["budget-mb"]) * 1024 * 1024,
  schemaParser,
});
await service.createTenant("writer", "writer");
await service.writeSchema("writer", "entity user {}");

const gcPauses: number[] = [];
/** The longest pause per kind of collection (perf_hooks' NODE_PERFORMANCE_GC_* kinds). */
const gcKinds = new Map<string, number>();
const GC_KIND: Record<number, string> = { 1: "minor", 2: "major", 4: "incremental", 8: "weak callbacks" };
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcPauses.push(entry.duration);
    const kind = GC_KIND[(entry as PerformanceEntry & { detail: { kind: number } }).detail.kind] ?? "other";
    gcKinds.set(kind, Math.max(gcKinds.get(kind) ?? 0, entry.duration));
  }
});
observer.observe({ entryTypes: ["gc"] });

const MB = 1024 * 1024;
const memory = () => {
  const m = process.memoryUsage();
  return `RSS ${(m.rss / MB).toFixed(0)} MB, heap total ${(m.heapTotal / MB).toFixed(0)} MB, used ${(m.heapUsed / MB).toFixed(0)} MB`;
};
const ms = (ns: number) => (ns / 1e6).toFixed(1);
/** The main thread's CPU time so far, in ns (getrusage RUSAGE_THREAD). */
const threadCpuNs = () => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) * 1000;
};

let salt = 1000;
let rssMax = 0;
console.log(`database ${values.database}, budget ${values["budget-mb"]} MiB, ${WRITES} writes per kind`);
for (const [label, make] of KINDS.filter(([l]) => l.includes(values.kind!))) {
  for (let i = 0; i < 5; i++) await service.writeSchema("writer", make(salt++)); // warm-up
  const texts = Array.from({ length: WRITES }, () => make(salt++));
  await new Promise((r) => setTimeout(r, 20));
  gcPauses.length = 0;
  gcKinds.clear();
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let ticking = true;
  let cpuTurnMax = 0;
  let lastCpu = threadCpuNs();
  const tick = () => {
    const now = threadCpuNs();
    cpuTurnMax = Math.max(cpuTurnMax, now - lastCpu);
    lastCpu = now;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const cpu = process.cpuUsage();
  const started = performance.now();
  // writes back to back; a 1 ms timer is what another tenant's request would wait behind
  for (const text of texts) {
    await service.writeSchema("writer", text);
    rssMax = Math.max(rssMax, process.memoryUsage.rss());
  }
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  ticking = false;
  delay.disable();
  await new Promise((r) => setTimeout(r, 50)); // the last GC entries
  const gcSum = gcPauses.reduce((a, b) => a + b, 0);
  console.log(
    `${label}: event-loop block max ${ms(delay.max)} ms, p99 ${ms(delay.percentile(99))} ms; ` +
      `longest turn by main-thread CPU ${ms(cpuTurnMax)} ms; ` +
      `GC pauses ${gcPauses.length} (${(gcSum / WRITES).toFixed(1)} ms per write, longest ${[...gcKinds].map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ")} ms); ` +
      `CPU ${((used.user + used.system) / 1000 / WRITES).toFixed(1)} ms per write; wall ${(wall / WRITES).toFixed(1)} ms per write`,
  );
}
observer.disconnect();
console.log(`memory: max RSS during the writes ${(rssMax / MB).toFixed(0)} MB; at the end: ${memory()}`);
const idle = Number(values["idle-seconds"]);
for (let waited = 0; waited < idle; waited += 5) {
  await new Promise((r) => setTimeout(r, 5000));
  console.log(`  after ${waited + 5} s without work: ${memory()}`);
}
gc();
gc();
console.log(`  after two full collections: ${memory()}`);
gc({ type: "major", execution: "sync", flavor: "last-resort" });
console.log(`  after a last-resort collection: ${memory()}`);
console.log(`  compiled schemas: estimated ${(service.schemas.bytes / MB).toFixed(0)} MiB`);
await schemaParser?.close();
await store.close?.();
rmSync(dir, { recursive: true, force: true });
