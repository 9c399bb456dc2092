/**
 * Core engine benchmark (in-process, memory store): Permify's load-test schema and seed dataset (100,000 ids),
 * checks with the k6 script's request mix, single-threaded.
 *
 *   node loadtest/bench-core.ts [--ids 100000] [--seconds 5] [--expiring 0.1]
 *
 * `--expiring f`: that share of the tuples (every 1/f-th written) carries an expiresAt an hour ahead, so every
 * read filters by the evaluation time while the answers stay those of the dataset without expiry.
 *
 * Measures: schema compile time (parse + compile; cold = first, warm = median after warm-up), checks/s and CPU
 * time per check (process.cpuUsage: steadier than checks/s on a shared machine), per-check latency p50/p99 (each
 * check timed with process.hrtime.bigint), RSS and heapUsed after loading.
 */
import { parseArgs } from "node:util";
import { check, compileSchema, MemoryStore, parseSchema } from "@pemba/core";
import { SEED_SCHEMA } from "./lib/seed.ts";
import { checkMix, memoryTarget, seedMemoryStore } from "./lib/seed-memory.ts";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "100000" },
    seconds: { type: "string", default: "5" },
    expiring: { type: "string", default: "0" },
  },
});
const EXPIRING = Number(values.expiring);
const EXPIRES_AT = Date.now() + 3_600_000;
const N = Number(values.ids);
const SECONDS = Number(values.seconds);
const TENANT = "t1";

const ms = (ns: bigint) => Number(ns) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// ---- compile time ----
let t0 = process.hrtime.bigint();
let compiled = compileSchema(parseSchema(SEED_SCHEMA));
const compileCold = ms(process.hrtime.bigint() - t0);
const warm: number[] = [];
for (let i = 0; i < 200; i++) {
  t0 = process.hrtime.bigint();
  compiled = compileSchema(parseSchema(SEED_SCHEMA));
  warm.push(ms(process.hrtime.bigint() - t0));
}
const compileWarm = median(warm);

// ---- seed data ----
const store = new MemoryStore();
const user = (id: string) => ({ type: "user", id, relation: "" });
t0 = process.hrtime.bigint();
await seedMemoryStore(store, TENANT, N, { expiring: EXPIRING, expiresAt: EXPIRES_AT });
const seedSeconds = ms(process.hrtime.bigint() - t0) / 1000;
globalThis.gc?.();
const memory = process.memoryUsage();

// ---- the k6 request mix ----
const QUERIES = 1 << 16;
const queries = checkMix(N, QUERIES);
const target = memoryTarget(store, TENANT);

// Sanity: known answers (owner sees own content; follower of a public-ish chain; blocked user denied).
const expectCan = (type: string, id: string, subject: string, want: boolean) => {
  const out = check(compiled, target, { entity: { type, id }, permission: "view", subject: user(subject) });
  if (out instanceof Promise) throw new Error("memory store check should be synchronous");
  if ((out.can === "CHECK_RESULT_ALLOWED") !== want)
    throw new Error(`${type}:${id} view user:${subject} != ${want}`);
};
expectCan("content", "5", "5", true);
expectCan("content", "5", "6", true); // user:6 follows content:5's owner (user:5#follower@user:6)
expectCan("content", "5", "7", false); // user:7 is blocked by user:5
expectCan("content", "8", "123", true); // content:8 is public
expectCan("interaction", "5", "5", true);

// ---- throughput (no per-check timer) ----
let allowed = 0;
/** CPU time (user + system) per check of the latest `run`: unlike checks/s, not lowered by other processes. */
let cpuMicrosPerCheck = 0;
const run = (seconds: number) => {
  let n = 0;
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  while (process.hrtime.bigint() < end) {
    for (let k = 0; k < 1000; k++) {
      const out = check(compiled, target, queries[(n + k) & (QUERIES - 1)]) as { can: string };
      if (out.can === "CHECK_RESULT_ALLOWED") allowed++;
    }
    n += 1000;
  }
  const used = process.cpuUsage(cpu);
  cpuMicrosPerCheck = (used.user + used.system) / n;
  return n / (ms(process.hrtime.bigint() - start) / 1000);
};
run(1); // warm-up
allowed = 0;
const checksPerSecond = run(SECONDS);

// ---- latency (each check timed) ----
const LAT = 200_000;
const lat = new Float64Array(LAT);
for (let i = 0; i < LAT; i++) {
  const q = queries[i & (QUERIES - 1)];
  const s = process.hrtime.bigint();
  check(compiled, target, q);
  lat[i] = Number(process.hrtime.bigint() - s) / 1000;
}
lat.sort();
const p = (q: number) => lat[Math.min(LAT - 1, Math.floor(q * LAT))];

const result = {
  ids: N,
  expiringShare: EXPIRING,
  compileColdMs: Number(compileCold.toFixed(3)),
  compileWarmMs: Number(compileWarm.toFixed(3)),
  seedSeconds: Number(seedSeconds.toFixed(2)),
  rssMB: Math.round(memory.rss / 2 ** 20),
  heapUsedMB: Math.round(memory.heapUsed / 2 ** 20),
  checksPerSecond: Math.round(checksPerSecond),
  cpuMicrosPerCheck: Number(cpuMicrosPerCheck.toFixed(3)),
  allowedShare: Number((allowed / (checksPerSecond * SECONDS)).toFixed(3)),
  latencyMicros: {
    p50: Number(p(0.5).toFixed(2)),
    p99: Number(p(0.99).toFixed(2)),
    p999: Number(p(0.999).toFixed(2)),
  },
  node: process.version,
};
console.log(JSON.stringify(result, null, 2));
