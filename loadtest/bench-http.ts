/**
 * HTTP cost/throughput benchmark: `pemba serve` with Permify's seed dataset vs a bare node:http server that answers a
 * fixed check response, both loaded by k6 in the open model (constant arrival rate, no sleep) with the request mix
 * of Permify's check script. Everything runs on 127.0.0.1 and stops by itself.
 *
 *   node --experimental-strip-types loadtest/bench-http.ts [--postgres | --memory] [--rate 2000] [--duration 60]
 *        [--start-rate 500] [--step-factor 1.25] [--step-duration 15] [--max-rate 20000] [--log-level info]
 *        [--rounds 3] [--skip-bare] [--variants SPEC [--together]] [--cpu-prof-dir <dir>] [--node-flags="<flags for pemba's node>"]
 *        [--total-ids 100000]
 *   --total-ids: the checks' entity and subject ids are drawn uniformly from 0..N-1 (Permify's check script: 100,000,
 *   what the seed writes). A small N (e.g. 1000) checks only keys the replica's working set holds after the warm-up:
 *   the HTTP server's cost without the store's cold reads.
 *   --cpu-prof-dir writes pemba's V8 CPU profile (read it with loadtest/profile-summary.ts); --node-flags passes
 *   e.g. "--perf-basic-prof" for `perf record -p <pid>`.
 *
 * --variants "off=;trace1=--otel-endpoint {otlp} --otel-sample-ratio 0.01;log=--decision-log {dir}/d.ndjson" compares
 * `pemba serve` flag sets instead: one server per variant over the same seeded SQLite file (seeded once, through the
 * first), fixed-rate windows alternating between them for --rounds, CPU per check of each and each round's ratio to
 * the first variant's adjacent window (no bare server, no rate stepping). `{otlp}` is an OTLP/HTTP receiver in this
 * process that takes and drops what it is sent; `{dir}` the benchmark's temporary directory. With --together every
 * variant is loaded in the same window instead (one k6 per server at --rate each, started together): a busy
 * machine's swings then hit all variants at once, and each round's ratio compares servers measured side by side.
 *
 * --memory serves from the memory store (`--database memory:`), which isolates the HTTP layer's cost (parsing,
 * validation, auth, logging, metrics, serialization) from SQL; the seed data is the same.
 *
 * Measures (a) server CPU (user+system from /proc/<pid>/stat) per answered request at a fixed rate, in --rounds
 * windows alternating between the bare server and pemba (medians reported, and each round's ratio); (b) the highest
 * rate held with p99 <= 10 ms and < 1% dropped iterations, stepping the rate up (each step on both servers, a missed
 * step run once more); (c) server RSS after seeding and under load; (d) seeding time; with --postgres also
 * PostgreSQL's own CPU per check.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startDatabase } from "./lib/database.ts";
import { type K6Run, metric, runK6 } from "./lib/k6.ts";
import { cpuSeconds, postgresCpu, postgresCpuBetween, rssMegabytes, sampleRss } from "./lib/proc.ts";
import { loadAverage } from "./lib/report.ts";
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
    rounds: { type: "string", default: "3" },
    "skip-bare": { type: "boolean" },
    "cpu-prof-dir": { type: "string" },
    "node-flags": { type: "string", default: "" },
    variants: { type: "string" },
    together: { type: "boolean" },
    "total-ids": { type: "string", default: "100000" },
  },
});
if (values.postgres && values.memory) throw new Error("--postgres and --memory exclude each other");
const RATE = Number(values.rate);
const DURATION = Number(values.duration);
const ROUNDS = Number(values.rounds);
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
    TOTAL_IDS: values["total-ids"]!,
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

/** One fixed-rate window: CPU per answered request (+ PostgreSQL's) and peak RSS. */
async function costWindow(
  server: ServerProcess,
  schemaVersion: string,
  pgPort?: number,
): Promise<CostResult> {
  const cpuBefore = cpuSeconds(server.pid);
  const pgBefore = pgPort === undefined ? undefined : postgresCpu(pgPort);
  const rss = sampleRss(server.pid);
  const result = await load(server.url, schemaVersion, RATE, DURATION);
  const rssUnderLoadMb = rss.stop();
  const cpu = cpuSeconds(server.pid) - cpuBefore;
  const pg =
    pgPort === undefined || pgBefore === undefined
      ? undefined
      : postgresCpuBetween(pgBefore, postgresCpu(pgPort));
  const perRequest = (seconds: number) => (1e6 * seconds) / Math.max(1, result.answered);
  return {
    cpuPerRequestUs: perRequest(cpu),
    pgCpuPerRequestUs: pg === undefined ? undefined : perRequest(pg),
    rssUnderLoadMb,
    load: result,
  };
}

/** A load step passes with p99 <= 10 ms, < 1% dropped iterations and no failed check. */
function held(r: LoadResult): boolean {
  const dropped = r.dropped / (r.answered + r.dropped || 1);
  return r.p99 <= P99_LIMIT_MS && dropped < DROP_LIMIT && r.failed === 0;
}

/**
 * One rate step; a step that misses is run once more before it counts as not held (a single 15 s window on a shared
 * machine can catch a stall of the machine, not of the server). Both attempts are logged.
 */
async function step(
  name: string,
  server: ServerProcess,
  schemaVersion: string,
  rate: number,
): Promise<boolean> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    const r = await load(server.url, schemaVersion, rate, Number(values["step-duration"]));
    const ok = held(r);
    log(`  ${name} ${describe(r)} -> ${ok ? "held" : attempt === 1 ? "missed, once more" : "not held"}`);
    if (ok) return true;
  }
  return false;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const report: string[] = [];
if (values.variants !== undefined) {
  await compareVariants(values.variants);
  process.exit(0);
}
log(`load average before: ${loadAverage()} (${cpus().length} CPUs)`);
// Both servers run side by side for the whole benchmark (each idle while the other is loaded), and their windows
// alternate: on a shared machine the speed drifts by 10-30% over minutes, and alternating exposes both servers to
// the same drift instead of measuring one of them minutes after the other.
const bare = values["skip-bare"] ? undefined : await startBareServer();
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
  if (bare) log(`bare node:http server at ${bare.url} (pid ${bare.pid})`);
  log(`pemba serve at ${server.url} (pid ${server.pid}, log level ${values["log-level"]})`);
  const schemaVersion = await writeSeedSchema(server.url);
  log("seeding (Permify's writer: 600,000 tuples + 200,000 attributes) ...");
  const seeded = await seed(server.url, schemaVersion, () => {});
  const rssAfterSeed = rssMegabytes(server.pid);
  log(`seeded in ${seeded.seconds.toFixed(1)} s; RSS after seeding ${rssAfterSeed.toFixed(0)} MB`);
  log(`spot checks: ${await spotCheck(server.url, schemaVersion)} decisions as expected`);
  const pgPort = values.postgres ? Number(new URL(database.url).port) : undefined;

  // (a) + (c): warm-up, then ROUNDS alternating fixed-rate windows
  log(`warm-up: ${RATE}/s for 5 s each`);
  if (bare) await load(bare.url, "", RATE, 5);
  await load(server.url, schemaVersion, RATE, 5);
  const bareCosts: CostResult[] = [];
  const costs: CostResult[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    if (bare) {
      const b = await costWindow(bare, "");
      bareCosts.push(b);
      log(`round ${round} bare: CPU/request ${b.cpuPerRequestUs.toFixed(1)} us; ${describe(b.load)}`);
    }
    const c = await costWindow(server, schemaVersion, pgPort);
    costs.push(c);
    const pg = c.pgCpuPerRequestUs === undefined ? "" : ` + PostgreSQL ${c.pgCpuPerRequestUs.toFixed(1)} us`;
    const ratio = bare
      ? ` = ${((c.cpuPerRequestUs + (c.pgCpuPerRequestUs ?? 0)) / bareCosts.at(-1)!.cpuPerRequestUs).toFixed(2)}x`
      : "";
    log(
      `round ${round} pemba: CPU/check ${c.cpuPerRequestUs.toFixed(1)} us${pg}${ratio}; ${describe(c.load)}`,
    );
  }

  // (b): step the rate up, each step on the bare server then on pemba, until both stop holding
  log("stepping the rate up (bare and pemba alternating) ...");
  let bareBest = bare ? 0 : Number.NaN;
  let best = 0;
  let bareHolding = bare !== undefined;
  let holding = true;
  for (let rate = Number(values["start-rate"]); rate <= Number(values["max-rate"]); ) {
    if (bareHolding && bare) {
      bareHolding = await step("bare ", bare, "", rate);
      if (bareHolding) bareBest = rate;
    }
    if (holding) {
      holding = await step("pemba", server, schemaVersion, rate);
      if (holding) best = rate;
    }
    if (!bareHolding && !holding) break;
    rate = Math.round(rate * Number(values["step-factor"]));
  }

  const cpu = median(costs.map((c) => c.cpuPerRequestUs));
  const pgCpu = pgPort === undefined ? undefined : median(costs.map((c) => c.pgCpuPerRequestUs ?? 0));
  const rssUnderLoad = Math.max(...costs.map((c) => c.rssUnderLoadMb));
  const perRound = (xs: CostResult[]) => xs.map((c) => c.cpuPerRequestUs.toFixed(1)).join(", ");
  if (bare) {
    report.push(
      `bare node:http: CPU/request ${median(bareCosts.map((c) => c.cpuPerRequestUs)).toFixed(1)} us (median of ${perRound(bareCosts)}); highest rate held ${bareBest}/s; RSS under load ${Math.max(...bareCosts.map((c) => c.rssUnderLoadMb)).toFixed(0)} MB`,
    );
  }
  const kind = values.postgres ? "PostgreSQL" : values.memory ? "memory" : "SQLite";
  report.push(
    `pemba (${kind}): CPU/check ${cpu.toFixed(1)} us (median of ${perRound(costs)})` +
      (pgCpu === undefined ? "" : ` + PostgreSQL ${pgCpu.toFixed(1)} us`) +
      `; highest rate held ${best}/s; RSS after seeding ${rssAfterSeed.toFixed(0)} MB, under load ${rssUnderLoad.toFixed(0)} MB; seeding ${seeded.seconds.toFixed(1)} s`,
  );
  if (bare) {
    const cpuTarget = values.postgres ? 3 : 1.5;
    const rateTarget = values.postgres ? 0.5 : 0.8;
    const ratios = costs.map(
      (c, i) => (c.cpuPerRequestUs + (c.pgCpuPerRequestUs ?? 0)) / bareCosts[i]!.cpuPerRequestUs,
    );
    report.push(
      // each round pairs adjacent windows; the ratio of the medians mixes windows minutes apart
      `ratios: CPU/check ${median(ratios).toFixed(2)}x bare (median of the rounds ${ratios.map((r) => r.toFixed(2)).join(", ")}; ` +
        `ratio of the medians ${((cpu + (pgCpu ?? 0)) / median(bareCosts.map((c) => c.cpuPerRequestUs))).toFixed(2)}x; target <= ${cpuTarget}x); ` +
        `throughput ${((100 * best) / Math.max(1, bareBest)).toFixed(0)}% of bare (target >= ${100 * rateTarget}%)` +
        (values.postgres ? "" : `; RSS target <= 300 MB`),
    );
  }
} finally {
  await server.stop();
  await bare?.stop();
  await database.stop();
  rmSync(dir, { recursive: true, force: true });
}
log(`load average after: ${loadAverage()}`);
console.log("\n== results");
for (const line of report) console.log(line);

/** An OTLP/HTTP receiver that reads and drops every export (the servers' trace and log exports go here). */
async function startOtlpSink(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  const { createServer } = await import("node:http");
  let requests = 0;
  const sink = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      requests++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((done) => sink.listen(0, "127.0.0.1", done));
  const { port } = sink.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () => new Promise((done) => sink.close(() => done())),
  };
}

/** --variants: pemba serve flag sets over one seeded SQLite file, fixed-rate windows alternating between them. */
async function compareVariants(spec: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "pemba-bench-"));
  const otlp = await startOtlpSink();
  const variants = spec.split(";").map((entry) => {
    const eq = entry.indexOf("=");
    const flags = entry
      .slice(eq + 1)
      .replaceAll("{otlp}", otlp.url)
      .replaceAll("{dir}", dir)
      .split(" ")
      .filter((f) => f !== "");
    return { name: entry.slice(0, eq), flags };
  });
  const database = await startDatabase(values.postgres === true, dir);
  const servers: ServerProcess[] = [];
  try {
    log(`load average before: ${loadAverage()} (${cpus().length} CPUs); database: ${database.label}`);
    const first = await startPemba(database.url, [
      "--log-level",
      values["log-level"]!,
      ...variants[0]!.flags,
    ]);
    servers.push(first);
    const schemaVersion = await writeSeedSchema(first.url);
    log("seeding (Permify's writer: 600,000 tuples + 200,000 attributes) ...");
    const seeded = await seed(first.url, schemaVersion, () => {});
    log(`seeded in ${seeded.seconds.toFixed(1)} s`);
    for (const v of variants.slice(1)) {
      servers.push(await startPemba(database.url, ["--log-level", values["log-level"]!, ...v.flags]));
    }
    for (const [i, server] of servers.entries()) {
      log(`${variants[i]!.name}: pid ${server.pid}, flags ${variants[i]!.flags.join(" ") || "(none)"}`);
      log(`  spot checks: ${await spotCheck(server.url, schemaVersion)} decisions as expected`);
      await load(server.url, schemaVersion, RATE, 5); // warm-up
    }
    const costs = variants.map(() => [] as number[]);
    const ratios = variants.map(() => [] as number[]);
    for (let round = 1; round <= ROUNDS; round++) {
      if (values.together) {
        const windows = await Promise.all(servers.map((s) => costWindow(s, schemaVersion)));
        for (const [i, c] of windows.entries()) {
          costs[i]!.push(c.cpuPerRequestUs);
          log(
            `round ${round} ${variants[i]!.name}: CPU/check ${c.cpuPerRequestUs.toFixed(1)} us; ${describe(c.load)}`,
          );
        }
      }
      // each round starts with another variant, so no variant always follows the same one
      for (let k = 0; k < (values.together ? 0 : servers.length); k++) {
        const i = (k + round - 1) % servers.length;
        const c = await costWindow(servers[i]!, schemaVersion);
        costs[i]!.push(c.cpuPerRequestUs);
        log(
          `round ${round} ${variants[i]!.name}: CPU/check ${c.cpuPerRequestUs.toFixed(1)} us; ${describe(c.load)}`,
        );
      }
      for (let i = 0; i < servers.length; i++) ratios[i]!.push(costs[i]!.at(-1)! / costs[0]!.at(-1)!);
    }
    console.log("\n== results");
    for (const [i, v] of variants.entries()) {
      console.log(
        `${v.name}: CPU/check ${median(costs[i]!).toFixed(1)} us (rounds ${costs[i]!.map((c) => c.toFixed(1)).join(", ")}); ` +
          `vs ${variants[0]!.name} ${median(ratios[i]!).toFixed(3)}x (median of the rounds ${ratios[i]!.map((r) => r.toFixed(3)).join(", ")})`,
      );
    }
    console.log(`OTLP receiver: ${otlp.requests()} exports received; load average after: ${loadAverage()}`);
  } finally {
    for (const server of servers) await server.stop();
    await otlp.close();
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
