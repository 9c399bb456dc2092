/**
 * HTTP cost/throughput benchmark: `pemba serve` with Permify's seed dataset vs a bare node:http server that answers a
 * fixed check response, both loaded by k6 in the open model (constant arrival rate, no sleep) with the request mix
 * of Permify's check script. Everything runs on 127.0.0.1 and stops by itself.
 *
 *   node --experimental-strip-types loadtest/bench-http.ts [--postgres | --memory] [--rate 2000] [--duration 60]
 *        [--start-rate 500] [--step-factor 1.25] [--step-duration 15] [--max-rate 20000] [--log-level info]
 *        [--skip-bare] [--cpu-prof-dir <dir>] [--node-flags="<flags for pemba's node>"]
 *   --cpu-prof-dir writes pemba's V8 CPU profile (read it with loadtest/profile-summary.ts); --node-flags passes
 *   e.g. "--perf-basic-prof" for `perf record -p <pid>`.
 *
 * --memory serves from the memory store (`--database memory:`), which isolates the HTTP layer's cost (parsing,
 * validation, auth, logging, metrics, serialization) from SQL; the seed data is the same.
 *
 * Measures (a) server CPU (user+system from /proc/<pid>/stat) per answered request at a fixed rate; (b) the highest
 * rate held with p99 <= 10 ms and < 1% dropped iterations, stepping the rate up; (c) server RSS after seeding and
 * under load; (d) seeding time; with --postgres also PostgreSQL's own CPU per check.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startDatabase } from "./lib/database.ts";
import { type K6Run, metric, runK6 } from "./lib/k6.ts";
import { cpuSeconds, postgresCpu, postgresCpuBetween, rssMegabytes, sampleRss } from "./lib/proc.ts";
import { seed, spotCheck, TENANT_ID, writeSeedSchema } from "./lib/seed.ts";
import { type ServerProcess, startBareServer, startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    postgres: { type: "boolean" },
    memory: { type: "boolean" },
    rate: { type: "string", default: "2000" },
    duration: { type: "string", default: "60" },
    "start-rate": { type: "string", default: "500" },
    "step-factor": { type: "string", default: "1.25" },
    "step-duration": { type: "string", default: "15" },
    "max-rate": { type: "string", default: "20000" },
    "log-level": { type: "string", default: "info" },
    "skip-bare": { type: "boolean" },
    "cpu-prof-dir": { type: "string" },
    "node-flags": { type: "string", default: "" },
  },
});
if (values.postgres && values.memory) throw new Error("--postgres and --memory exclude each other");
const RATE = Number(values.rate);
const DURATION = Number(values.duration);
const P99_LIMIT_MS = 10;
const DROP_LIMIT = 0.01;
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

interface LoadResult {
  rate: number;
  answered: number;
  failed: number;
  dropped: number;
  p99: number;
  p50: number;
}

async function load(url: string, schemaVersion: string, rate: number, seconds: number): Promise<LoadResult> {
  const run: K6Run = await runK6("check-open-model.js", {
    PEMBA_URL: url,
    TENANT_ID,
    SCHEMA_VERSION: schemaVersion,
    RATE: rate,
    DURATION: `${seconds}s`,
  });
  const s = run.summary;
  return {
    rate,
    answered: metric(s, "http_reqs", "count"),
    failed: metric(s, "checks", "fails"),
    dropped: metric(s, "dropped_iterations", "count"),
    p99: metric(s, "http_req_duration", "p(99)"),
    p50: metric(s, "http_req_duration", "med"),
  };
}

function describe(r: LoadResult): string {
  const dropPct = (100 * r.dropped) / (r.answered + r.dropped || 1);
  return `${r.rate}/s: answered ${r.answered}, failed checks ${r.failed}, dropped ${dropPct.toFixed(2)}%, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`;
}

interface CostResult {
  cpuPerRequestUs: number;
  pgCpuPerRequestUs?: number;
  rssUnderLoadMb: number;
  load: LoadResult;
}

/** (a) and (c): CPU per answered request and peak RSS at the fixed rate, after a short warm-up. */
async function measureCost(
  server: ServerProcess,
  schemaVersion: string,
  pgPort?: number,
): Promise<CostResult> {
  log(`warm-up: ${RATE}/s for 5 s`);
  await load(server.url, schemaVersion, RATE, 5);
  const cpuBefore = cpuSeconds(server.pid);
  const pgBefore = pgPort === undefined ? undefined : postgresCpu(pgPort);
  const rss = sampleRss(server.pid);
  log(`fixed load: ${RATE}/s for ${DURATION} s`);
  const result = await load(server.url, schemaVersion, RATE, DURATION);
  const rssUnderLoadMb = rss.stop();
  const cpu = cpuSeconds(server.pid) - cpuBefore;
  const pg =
    pgPort === undefined || pgBefore === undefined
      ? undefined
      : postgresCpuBetween(pgBefore, postgresCpu(pgPort));
  log(`  ${describe(result)}`);
  const perRequest = (seconds: number) => (1e6 * seconds) / Math.max(1, result.answered);
  return {
    cpuPerRequestUs: perRequest(cpu),
    pgCpuPerRequestUs: pg === undefined ? undefined : perRequest(pg),
    rssUnderLoadMb,
    load: result,
  };
}

/** (b): step the rate up until p99 > 10 ms, >= 1% dropped, or a failed check; the last passing rate. */
async function highestRate(server: ServerProcess, schemaVersion: string): Promise<number> {
  let rate = Number(values["start-rate"]);
  let best = 0;
  while (rate <= Number(values["max-rate"])) {
    const r = await load(server.url, schemaVersion, rate, Number(values["step-duration"]));
    const dropped = r.dropped / (r.answered + r.dropped || 1);
    const ok = r.p99 <= P99_LIMIT_MS && dropped < DROP_LIMIT && r.failed === 0;
    log(`  step ${describe(r)} -> ${ok ? "held" : "not held"}`);
    if (!ok) break;
    best = rate;
    rate = Math.round(rate * Number(values["step-factor"]));
  }
  return best;
}

const report: string[] = [];
log(
  `load average before: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")} (${cpus().length} CPUs)`,
);
let bare: { cost: CostResult; best: number } | undefined;
if (!values["skip-bare"]) {
  const server = await startBareServer();
  try {
    log(`bare node:http server at ${server.url} (pid ${server.pid})`);
    const cost = await measureCost(server, "");
    log("stepping the rate up (bare) ...");
    bare = { cost, best: await highestRate(server, "") };
    report.push(
      `bare node:http: CPU/request ${cost.cpuPerRequestUs.toFixed(1)} us; highest rate held ${bare.best}/s; RSS under load ${cost.rssUnderLoadMb.toFixed(0)} MB`,
    );
  } finally {
    await server.stop();
  }
}

const dir = mkdtempSync(join(tmpdir(), "pemba-bench-"));
const database = values.memory
  ? { url: "memory:", label: "memory store (memory:)", stop: async () => {} }
  : await startDatabase(values.postgres === true, dir);
log(`database: ${database.label}`);
const profileDir = values["cpu-prof-dir"];
const server = await startPemba(
  database.url,
  ["--log-level", values["log-level"]!],
  [
    ...(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []),
    ...values["node-flags"]!.split(" ").filter((flag) => flag !== ""),
  ],
);
try {
  log(`pemba serve at ${server.url} (pid ${server.pid}, log level ${values["log-level"]})`);
  const schemaVersion = await writeSeedSchema(server.url);
  log("seeding (Permify's writer: 600,000 tuples + 200,000 attributes) ...");
  const seeded = await seed(server.url, schemaVersion, () => {});
  const rssAfterSeed = rssMegabytes(server.pid);
  log(`seeded in ${seeded.seconds.toFixed(1)} s; RSS after seeding ${rssAfterSeed.toFixed(0)} MB`);
  log(`spot checks: ${await spotCheck(server.url, schemaVersion)} decisions as expected`);
  const pgPort = values.postgres ? Number(new URL(database.url).port) : undefined;
  const cost = await measureCost(server, schemaVersion, pgPort);
  log("stepping the rate up (pemba) ...");
  const best = await highestRate(server, schemaVersion);
  const kind = values.postgres ? "PostgreSQL" : values.memory ? "memory" : "SQLite";
  report.push(
    `pemba (${kind}): CPU/check ${cost.cpuPerRequestUs.toFixed(1)} us` +
      (cost.pgCpuPerRequestUs === undefined ? "" : ` + PostgreSQL ${cost.pgCpuPerRequestUs.toFixed(1)} us`) +
      `; highest rate held ${best}/s; RSS after seeding ${rssAfterSeed.toFixed(0)} MB, under load ${cost.rssUnderLoadMb.toFixed(0)} MB; seeding ${seeded.seconds.toFixed(1)} s`,
  );
  if (bare) {
    const total = cost.cpuPerRequestUs + (cost.pgCpuPerRequestUs ?? 0);
    const cpuTarget = values.postgres ? 3 : 1.5;
    const rateTarget = values.postgres ? 0.5 : 0.8;
    report.push(
      `ratios: CPU/check ${(total / bare.cost.cpuPerRequestUs).toFixed(2)}x bare (target <= ${cpuTarget}x); ` +
        `throughput ${((100 * best) / Math.max(1, bare.best)).toFixed(0)}% of bare (target >= ${100 * rateTarget}%)` +
        (values.postgres ? "" : `; RSS target <= 300 MB`),
    );
  }
} finally {
  await server.stop();
  await database.stop();
  rmSync(dir, { recursive: true, force: true });
}
log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log("\n== results");
for (const line of report) console.log(line);
