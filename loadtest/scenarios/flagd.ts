/**
 * flagd: a random schema and data (loadtest/lib/generate.ts, flagd's ff_gen.go) loaded into the target, then a
 * closed-model check load without sleep (k6/flagd-check.js, 20 VUs) in three windows: all CPUs, the server pinned
 * to CPU 0 (`taskset`), and pinned plus a quota of half a CPU (cgroup) when the machine allows one. During the
 * fixed-CPU windows k6 runs on the other CPUs. Reports requests/s and RSS in flagd's terms. --duration sets each
 * window's length (default 60 s).
 */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { cpuQuota, cpuQuotaUnavailable, pinToCpus, unpin } from "../lib/cpu-limit.ts";
import { generate } from "../lib/generate.ts";
import { type K6Run, metric } from "../lib/k6.ts";
import { cpuSeconds, sampleRss } from "../lib/proc.ts";
import { checksOf, checksText, formatMs, table } from "../lib/report.ts";
import { type Scenario, type ScenarioContext, seconds } from "../lib/scenario.ts";

/** `f`, callable many times, run once. */
function once(f: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      f();
    }
  };
}

interface Window {
  cpu: string;
  /** Applies the limit; returns its undo and, for a quota, a note on how often it bit. */
  setUp(pid: number): { release: () => void; note: () => string };
}

async function run(ctx: ScenarioContext) {
  const token = randomBytes(16).toString("hex");
  const options = ctx.smoke
    ? { entities: 3, ids: 500, kind: "mixed" as const, checks: 500, seed: 1 }
    : { entities: 10, ids: 10_000, kind: "mixed" as const, checks: 5000, seed: 1 };
  const generated = generate(options);
  const dataFile = join(ctx.workDir, "random.json");
  writeFileSync(dataFile, JSON.stringify(generated));
  const size = `${options.entities} types x ${options.ids} ids (${options.kind}): ${generated.tuples.length} tuples, ${generated.attributes.length} attributes`;
  ctx.log(`generated ${size}`);
  const failures: string[] = [];
  const target = await ctx.start({ auth: { kind: "key", key: token } });
  const env = { PEMBA_URL: target.url, PEMBA_TOKEN: token, DATA_FILE: dataFile };

  // seeding (setup) followed by a short warm-up load, so the first window does not pay for the JIT
  const warmUp = ctx.smoke ? 1 : 10;
  const seedRun = await ctx.k6("flagd-check.js", { ...env, DURATION: `${warmUp}s` }, "seeding and warm-up");
  const seeded = /Seeded [^"]*/.exec(seedRun.output)?.[0] ?? "seeding output missing";
  ctx.log(seeded);
  if (seedRun.exitCode !== 0 || checksOf(seedRun.summary).percent !== 100) {
    throw new Error(`seeding failed (k6 exit ${seedRun.exitCode}):\n${seedRun.output.slice(-2000)}`);
  }

  const cpuCount = cpus().length;
  const others = cpuCount > 1 ? `1-${cpuCount - 1}` : undefined;
  const noNote = () => "";
  const windows: Window[] = [
    { cpu: `all ${cpuCount} CPUs (shared with k6)`, setUp: () => ({ release: () => {}, note: noNote }) },
    {
      cpu: "1 CPU (taskset -c 0)",
      setUp: (pid) => {
        pinToCpus(pid, "0");
        return { release: () => unpin(pid, cpuCount), note: noNote };
      },
    },
  ];
  const unavailable = cpuQuotaUnavailable();
  const quotaNote =
    unavailable === undefined
      ? ""
      : `The 0.5 CPU run was skipped: no CPU quota can be set here (${unavailable}).`;
  if (unavailable !== undefined) ctx.log(quotaNote);
  else {
    windows.push({
      cpu: "0.5 CPU (taskset -c 0 + cgroup quota 50 ms per 100 ms)",
      setUp: (pid) => {
        pinToCpus(pid, "0");
        const quota = cpuQuota(pid, 0.5);
        let note = "";
        return {
          release: () => {
            const t = quota.throttling();
            note = `quota hit in ${t.throttled} of ${t.periods} periods`;
            quota.release();
            unpin(pid, cpuCount);
          },
          note: () => note,
        };
      },
    });
  }

  const duration = seconds(ctx, 60, 4);
  const rows: (string | number)[][] = [];
  for (const w of windows) {
    ctx.log(`${w.cpu}: 20 looping VUs, no sleep, ${duration} s ...`);
    const limit = w.setUp(target.serverPid);
    const release = once(limit.release);
    ctx.defer(release); // also when the run is interrupted
    const rss = sampleRss(target.serverPid, 200);
    const cpuBefore = cpuSeconds(target.serverPid);
    let maxRss: number;
    let cpuUsed: number;
    let result: K6Run;
    try {
      result = await ctx.k6("flagd-check.js", { ...env, SEED: 0, DURATION: `${duration}s` }, w.cpu, {
        cpus: w.cpu.startsWith("all") ? undefined : others,
      });
    } finally {
      maxRss = rss.stop();
      cpuUsed = cpuSeconds(target.serverPid) - cpuBefore;
      release();
    }
    const s = result.summary;
    const perSecond = metric(s, "http_reqs", "rate");
    const cores = cpuUsed / duration;
    ctx.log(
      `  ${perSecond.toFixed(0)} requests/s, RSS max ${maxRss.toFixed(0)} MB, server CPU ${cores.toFixed(2)} cores`,
    );
    rows.push([
      size,
      w.cpu,
      perSecond.toFixed(0),
      `${maxRss.toFixed(0)} MB`,
      `${cores.toFixed(2)}${limit.note() ? ` (${limit.note()})` : ""}`,
      Math.round(metric(s, "http_reqs", "count") / Math.max(cpuUsed, 1e-9)),
      formatMs(metric(s, "http_req_duration", "p(95)")),
      checksText(s),
    ]);
    if (checksOf(s).percent !== 100) failures.push(`${w.cpu}: checks ${checksText(s)}`);
    if (result.exitCode !== 0) failures.push(`${w.cpu}: k6 exited with ${result.exitCode}`);
  }

  const sections = [
    `## Results (flagd's terms: requests/s and memory at a fixed CPU)\n\n${seeded}. 20 looping VUs without sleep, ${duration} s per window; every decision checked against the generated data. RSS: the server process's maximum during the window (workerd's for the Worker). Server CPU used: its user+system CPU seconds over the window's length, from /proc (on a shared machine a limit of 1 CPU is an upper bound: other processes take their share of CPU 0 too).${quotaNote ? ` ${quotaNote}` : ""}\n\n${table(
      [
        "schema and data",
        "CPU",
        "requests/s",
        "RSS (max)",
        "server CPU used (cores)",
        "requests per server CPU-second",
        "http_req_duration p95",
        "checks",
      ],
      rows,
    )}`,
    `## flagd's published figure\n\n"flagd is able to serve ~20K HTTP requests/second with just 64MB memory and 1 CPU. And the impact of flag type is minimal." (flagd's load-test README; a flag evaluation per request, no storage behind it.)`,
  ];
  return { sections, failures };
}

export const flagd: Scenario = {
  title:
    "flagd's load test: random schema and data (like ff_gen.go), a check load without sleep at a fixed CPU (1, then 0.5), requests/s and RSS.",
  run,
};
