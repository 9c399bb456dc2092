/**
 * The floor of the ZITADEL soak on the Worker target: the same k6 script (k6/zitadel-soak.js: closed loop, no sleep,
 * 60 s timeout) and VU count against the bare Worker of loadtest/worker-bare (reads the body, answers a fixed
 * JSON body) under `wrangler dev --ip 127.0.0.1`, so what `wrangler dev` and workerd cost and hold at that load
 * without any of Pemba's work shows apart from the Worker's own.
 *
 *   node --experimental-strip-types loadtest/soak-floor-worker.ts [--vus 600] [--duration 3m]
 *
 * Prints k6's figures (requests, failed, iterations/s, p50/p95/p99/max) and, for wrangler's node and both workerd
 * processes, the RSS at the start, its max and at the end, and the CPU seconds used during the run.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startWranglerDev } from "@pemba/worker/testing";
import { LOADTEST_DIR, metric, runK6 } from "./lib/k6.ts";
import { cpuSeconds, rssMegabytes } from "./lib/proc.ts";
import { formatMs, loadAverage } from "./lib/report.ts";
import { parseDuration } from "./lib/scenario.ts";
import { workerdProcesses } from "./lib/targets.ts";

const { values } = parseArgs({
  options: {
    vus: { type: "string", default: "600" },
    duration: { type: "string", default: "3m" },
  },
});
const VUS = Number(values.vus);
const SECONDS = parseDuration(values.duration!);
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

const scratch = mkdtempSync(join(tmpdir(), "pemba-soak-floor-"));
const dev = await startWranglerDev(
  {},
  90_000,
  undefined,
  "warn",
  join(LOADTEST_DIR, "worker-bare", "wrangler.toml"),
);
try {
  const workerd = workerdProcesses(dev.child.pid!, dev.url);
  const procs = {
    wrangler: dev.child.pid!,
    "entry workerd": workerd.entry,
    "worker workerd": workerd.worker,
  };
  log(
    `bare Worker at ${dev.url}; ${Object.entries(procs)
      .map(([n, p]) => `${n} ${p}`)
      .join(", ")}; load ${loadAverage()}`,
  );
  // the script reads one token per VU; the bare Worker reads none
  const tokensFile = join(scratch, "tokens.json");
  writeFileSync(tokensFile, JSON.stringify(Array.from({ length: VUS }, (_, i) => `bare-${i}`)));
  const rss = new Map<string, number[]>();
  const cpu = new Map<string, number>();
  const sample = () => {
    for (const [name, pid] of Object.entries(procs)) {
      const list = rss.get(name) ?? [];
      list.push(rssMegabytes(pid));
      rss.set(name, list);
    }
  };
  sample();
  for (const [name, pid] of Object.entries(procs)) cpu.set(name, cpuSeconds(pid));
  const timer = setInterval(sample, 1000);
  const run = await runK6("zitadel-soak.js", {
    PEMBA_URL: dev.url,
    TOKENS_FILE: tokensFile,
    VUS,
    DURATION: `${SECONDS}s`,
    DOCS: 10_000,
    ORGS: 100,
    USERS: 5000,
  });
  clearInterval(timer);
  sample();
  const s = run.summary;
  const d = (p: string) => formatMs(metric(s, "http_req_duration", p));
  log(
    `k6: ${metric(s, "http_reqs", "count")} requests, ${metric(s, "http_req_failed", "passes")} failed, ${metric(s, "iterations", "rate").toFixed(0)} it/s, p50 ${d("med")} p95 ${d("p(95)")} p99 ${d("p(99)")} max ${d("max")}; load ${loadAverage()}`,
  );
  for (const [name, pid] of Object.entries(procs)) {
    const list = rss.get(name)!;
    log(
      `${name}: RSS ${list[0]!.toFixed(0)} / max ${Math.max(...list).toFixed(0)} / end ${list.at(-1)!.toFixed(0)} MB, CPU ${(cpuSeconds(pid) - cpu.get(name)!).toFixed(1)} s`,
    );
  }
} finally {
  await dev.close();
  rmSync(scratch, { recursive: true, force: true });
}
