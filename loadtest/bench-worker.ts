/**
 * The Worker's costs: bundle size, local cold start, and CPU per check in workerd against a bare Worker
 * answering a fixed body, on local D1 through `wrangler dev`.
 *
 *   node --experimental-strip-types loadtest/bench-worker.ts [--ids 100000] [--rate 20] [--duration 30] [--rounds 3]
 *     [--log-levels info,warn]
 *
 * 1. Bundle: `wrangler deploy --dry-run --outdir` (nothing is uploaded), each file's size raw and gzipped (the
 *    Workers size limit counts the gzipped upload; the free plan's is 3 MiB, our target 1 MiB).
 * 2. Cold start (local): seconds from spawning `wrangler dev` to the first answer, the bare Worker and Pemba's (both
 *    include wrangler's own start and bundling, so the difference is the Worker's share), then the first request
 *    that opens the store against the median of the next 20.
 * 3. Permify's seed writer (--ids ids) and spot checks, then CPU per answered check: the user+system CPU (from /proc)
 *    of the workerd process running the Worker (wrangler dev runs a second one in front of it, its entry proxy,
 *    logged apart), over --duration second windows at --rate checks/s (k6 open model), alternating bare, pemba (--rounds
 *    rounds; medians and each round's ratio). All Workers run side by side for the whole run.
 *
 * --log-levels: one Pemba Worker per PEMBA_LOG_LEVEL, each seeded, all measured in every round (bare, then each).
 * `info` (the Worker's default) writes a console.log line per check, `warn` none for a check that succeeds (as the
 * Node benchmarks run `pemba serve --log-level warn`); a console.log call costs ~0.7 ms of CPU in local workerd.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { runWrangler, startWranglerDev } from "@pemba/worker/testing";
import { LOADTEST_DIR, metric, runK6 } from "./lib/k6.ts";
import { cpuSeconds } from "./lib/proc.ts";
import { loadAverage } from "./lib/report.ts";
import { check, seed, spotCheck, TENANT_ID, writeSeedSchema } from "./lib/seed.ts";
import { startTarget, type Target, type WorkerdProcesses, workerdProcesses } from "./lib/targets.ts";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "100000" },
    rate: { type: "string", default: "20" },
    duration: { type: "string", default: "30" },
    rounds: { type: "string", default: "3" },
    "log-levels": { type: "string", default: "info,warn" },
  },
});
const IDS = Number(values.ids);
const RATE = Number(values.rate);
const DURATION = Number(values.duration);
const ROUNDS = Number(values.rounds);
const LOG_LEVELS = values["log-levels"].split(",").map((l) => l.trim());
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const KiB = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
const report: string[] = [];

// 1. bundle size
const outDir = mkdtempSync(join(tmpdir(), "pemba-worker-bundle-"));
try {
  await runWrangler(["deploy", "--dry-run", "--outdir", outDir]);
  let raw = 0;
  let gzipped = 0;
  for (const file of readdirSync(outDir, { recursive: true }) as string[]) {
    const path = join(outDir, file);
    // the modules wrangler would upload (it also writes a README.md there)
    if (!statSync(path).isFile() || !/\.(m?js|wasm)$/.test(file)) continue;
    const bytes = readFileSync(path);
    const gz = gzipSync(bytes).length;
    raw += bytes.length;
    gzipped += gz;
    log(`bundle file ${file}: ${KiB(bytes.length)}, gzipped ${KiB(gz)}`);
  }
  report.push(
    `bundle (wrangler deploy --dry-run, no source maps): ${KiB(raw)}, gzipped ${KiB(gzipped)} (target <= 1024 KiB)`,
  );
} finally {
  rmSync(outDir, { recursive: true, force: true });
}

// 2. cold start
const key = "bench-worker-key";
let started = performance.now();
const bare = await startWranglerDev(
  {},
  90_000,
  undefined,
  "warn",
  join(LOADTEST_DIR, "worker-bare", "wrangler.toml"),
);
const bareReady = (performance.now() - started) / 1000;
const pembas: Target[] = [];
for (const logLevel of LOG_LEVELS)
  pembas.push(await startTarget("worker", { auth: { kind: "key", key }, logLevel }));
const pemba = pembas[0]!;
try {
  log(
    `bare Worker at ${bare.url}; pemba at ${pembas.map((p, i) => `${p.url} (PEMBA_LOG_LEVEL=${LOG_LEVELS[i]})`).join(", ")} (${pemba.description})`,
  );
  report.push(
    `local cold start (spawn of wrangler dev to the first answer): bare ${bareReady.toFixed(1)} s, pemba ${pemba.readySeconds.toFixed(1)} s (after wrangler d1 migrations apply)`,
  );
  const version = await writeSeedSchema(pemba.url, key);
  started = performance.now();
  await check(pemba.url, version, "content:0", "user:0", key); // the first check: opens the schema and data
  const first = performance.now() - started;
  const warm: number[] = [];
  for (let i = 0; i < 20; i++) {
    started = performance.now();
    await check(pemba.url, version, "content:0", "user:0", key);
    warm.push(performance.now() - started);
  }
  report.push(
    `first check after the schema write: ${first.toFixed(1)} ms; the next 20: median ${median(warm).toFixed(1)} ms`,
  );

  // 3. seed, spot checks, CPU per check
  log(`seeding with Permify's writer (${IDS} ids) ...`);
  const seeded = await seed(pemba.url, version, () => {}, { token: key, totalIds: IDS });
  report.push(
    `Permify's seed writer on local D1: ${IDS} ids (${seeded.tuples + seeded.attributes} rows) in ${seeded.seconds.toFixed(1)} s, no failed batch`,
  );
  log(report.at(-1)!);
  log(`spot checks: ${await spotCheck(pemba.url, version, key, IDS)} decisions as expected`);
  // the other Workers: the same schema and rows (each database numbers its own schema versions)
  const versions = [version];
  for (const other of pembas.slice(1)) {
    const otherVersion = await writeSeedSchema(other.url, key);
    versions.push(otherVersion);
    await seed(other.url, otherVersion, () => {}, { token: key, totalIds: IDS });
    log(
      `${other.url}: seeded; spot checks ${await spotCheck(other.url, otherVersion, key, IDS)} as expected`,
    );
  }
  const bareWorkerd = workerdProcesses(bare.child.pid!, bare.url);
  const load = async (url: string, pids: WorkerdProcesses, schemaVersion = "") => {
    const before = cpuSeconds(pids.worker);
    const entryBefore = cpuSeconds(pids.entry);
    const run = await runK6("check-open-model.js", {
      PEMBA_URL: url,
      TENANT_ID,
      SCHEMA_VERSION: schemaVersion,
      PEMBA_TOKEN: key,
      TOTAL_IDS: IDS,
      RATE,
      DURATION: `${DURATION}s`,
    });
    const answered = metric(run.summary, "http_reqs", "count");
    const failed = metric(run.summary, "checks", "fails");
    const perRequest = (seconds: number) => (1e6 * seconds) / Math.max(1, answered);
    const us = perRequest(cpuSeconds(pids.worker) - before);
    const entryUs = perRequest(cpuSeconds(pids.entry) - entryBefore);
    const p50 = metric(run.summary, "http_req_duration", "med");
    return {
      us,
      entryUs,
      answered,
      failed,
      p50,
      dropped: metric(run.summary, "dropped_iterations", "count"),
    };
  };
  log(`warm-up: ${RATE}/s for 5 s each`);
  await runK6("check-open-model.js", { PEMBA_URL: bare.url, RATE, DURATION: "5s" });
  for (const [i, p] of pembas.entries()) {
    await runK6("check-open-model.js", {
      PEMBA_URL: p.url,
      PEMBA_TOKEN: key,
      SCHEMA_VERSION: versions[i]!,
      TOTAL_IDS: IDS,
      RATE,
      DURATION: "5s",
    });
  }
  const bareUs: number[] = [];
  const pembaUs = LOG_LEVELS.map((): number[] => []);
  const ratios = LOG_LEVELS.map((): number[] => []);
  for (let round = 1; round <= ROUNDS; round++) {
    const b = await load(bare.url, bareWorkerd);
    bareUs.push(b.us);
    const parts = [
      `bare ${b.us.toFixed(0)} us/request (+ entry ${b.entryUs.toFixed(0)}; ${b.answered} answered, p50 ${b.p50.toFixed(1)} ms)`,
    ];
    for (const [i, target] of pembas.entries()) {
      const p = await load(target.url, { worker: target.serverPid, entry: target.entryPid! }, versions[i]);
      pembaUs[i]!.push(p.us);
      ratios[i]!.push(p.us / b.us);
      parts.push(
        `pemba (${LOG_LEVELS[i]}) ${p.us.toFixed(0)} us/check (+ entry ${p.entryUs.toFixed(0)}; ${p.answered} answered, ${p.dropped} dropped, ${p.failed} failed checks, p50 ${p.p50.toFixed(1)} ms) = ${(p.us / b.us).toFixed(2)}x`,
      );
      if (p.failed > 0) process.exitCode = 1;
    }
    log(`round ${round}: ${parts.join("; ")}; load average ${loadAverage()}`);
  }
  report.push(
    `CPU of the workerd running the Worker per answered request (wrangler dev's entry workerd in front of it not counted) at ${RATE}/s, ${DURATION} s windows alternating bare, ${LOG_LEVELS.map((l) => `pemba (${l})`).join(", ")} (${ROUNDS} rounds): bare ${median(bareUs).toFixed(0)} us`,
  );
  for (const [i, level] of LOG_LEVELS.entries()) {
    report.push(
      `  PEMBA_LOG_LEVEL=${level}: pemba ${median(pembaUs[i]!).toFixed(0)} us (+${(median(pembaUs[i]!) - median(bareUs)).toFixed(0)} us); ratio ${median(ratios[i]!).toFixed(2)}x (median of the rounds ${ratios[i]!.map((r) => r.toFixed(2)).join(", ")}; target <= 1.3x)`,
    );
  }
} finally {
  for (const p of pembas) await p.stop();
  await bare.close();
}
log(`load average after: ${loadAverage()}`);
console.log("\n== results");
for (const line of report) console.log(line);
