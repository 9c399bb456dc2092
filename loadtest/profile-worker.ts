/**
 * Where the Worker's CPU per check goes in workerd: runs the Worker under `wrangler dev` on local D1
 * (as bench-worker.ts does), seeds Permify's data, warms the isolate's replica up, then takes a V8 CPU profile of the
 * Worker's isolate over a window of checks at a fixed rate (DevTools protocol Profiler.start/stop over the inspector
 * wrangler dev exposes) and, with --perf, a `perf record` of the workerd process running the Worker over a second
 * window (its native side: HTTP, the isolate's entry and exit, local D1, console.log). Prints the top self-time
 * functions of both and the CPU of both workerd processes per check.
 *
 *   node --experimental-strip-types loadtest/profile-worker.ts [--ids 10000] [--rate 20] [--seconds 20]
 *     [--out /tmp/worker.cpuprofile] [--perf] [--top 30] [--interval 500] [--log-level info]
 */

import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { inspect } from "./lib/devtools.ts";
import { runK6 } from "./lib/k6.ts";
import { cpuSeconds } from "./lib/proc.ts";
import { loadAverage } from "./lib/report.ts";
import { seed, TENANT_ID, writeSeedSchema } from "./lib/seed.ts";
import { startTarget } from "./lib/targets.ts";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "10000" },
    rate: { type: "string", default: "20" },
    seconds: { type: "string", default: "20" },
    out: { type: "string", default: "/tmp/pemba-worker.cpuprofile" },
    perf: { type: "boolean", default: false },
    top: { type: "string", default: "30" },
    /** PEMBA_LOG_LEVEL of the Worker (info: a console.log line per check). */
    "log-level": { type: "string", default: "info" },
    /** The V8 profiler's sampling interval (us): each sample costs the isolate, so the window's CPU grows with it. */
    interval: { type: "string", default: "500" },
  },
});
const IDS = Number(values.ids);
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; scriptId: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function and per source file (ms), from a V8 profile. */
function summarize(profile: Profile, top: number, checks: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const nameOf = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^.*\/(node_modules\/\.pnpm\/)?/, "") || "(native)";
    return `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
  };
  let total = 0;
  profile.samples.forEach((id, i) => {
    const micros = profile.timeDeltas[i] ?? 0;
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const file = url.replace(/^.*\/(node_modules\/\.pnpm\/)?/, "") || "(native)";
    const name = `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
    byFile.set(file, (byFile.get(file) ?? 0) + micros);
    if (functionName !== "(idle)") total += micros;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = nameOf(byId.get(at)!);
      if (seen.has(n)) continue;
      seen.add(n);
      inclusive.set(n, (inclusive.get(n) ?? 0) + micros);
    }
  });
  const lines = [`busy (not idle) ${(total / 1000).toFixed(1)} ms = ${(total / checks).toFixed(1)} us/check`];
  const rows = (map: Map<string, number>, n: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `  ${(v / checks).toFixed(1).padStart(8)} us/check  ${k}`);
  lines.push("top self time by function:", ...rows(byFunction, top));
  lines.push("by file:", ...rows(byFile, 15));
  lines.push("top total (inclusive) time by function:", ...rows(inclusive, 2 * top));
  return lines.join("\n");
}

const key = "profile-worker-key";
const pemba = await startTarget("worker", { auth: { kind: "key", key }, logLevel: values["log-level"] });
try {
  log(
    `pemba at ${pemba.url}, inspector ${pemba.inspectorPort}, workerd ${pemba.serverPid} (entry ${pemba.entryPid})`,
  );
  const version = await writeSeedSchema(pemba.url, key);
  const seeded = await seed(pemba.url, version, () => {}, { token: key, totalIds: IDS });
  log(`seeded ${IDS} ids in ${seeded.seconds.toFixed(1)} s`);
  const k6Env = {
    PEMBA_URL: pemba.url,
    TENANT_ID,
    SCHEMA_VERSION: version,
    PEMBA_TOKEN: key,
    TOTAL_IDS: IDS,
    RATE,
  };
  // the first checks start the replica's background load; the warm-up lets it finish
  await runK6("check-open-model.js", { ...k6Env, DURATION: "10s" });
  const window = async <T>(during: () => Promise<T>) => {
    const worker = cpuSeconds(pemba.serverPid);
    const entry = cpuSeconds(pemba.entryPid!);
    const run = await runK6("check-open-model.js", { ...k6Env, DURATION: `${SECONDS}s` });
    const answered = run.summary.metrics.http_reqs?.count ?? 0;
    const failed = run.summary.metrics.checks?.fails ?? 0;
    const result = await during();
    const perCheck = (s: number) => (1e6 * s) / Math.max(1, answered);
    log(
      `window: ${answered} checks (${failed} failed), workerd ${perCheck(cpuSeconds(pemba.serverPid) - worker).toFixed(0)} us/check, entry workerd ${perCheck(cpuSeconds(pemba.entryPid!) - entry).toFixed(0)} us/check; load average ${loadAverage()}`,
    );
    return { result, answered };
  };

  const session = await inspect(pemba.inspectorPort!);
  log(`inspector target: ${session.title}`);
  await session.send("Profiler.enable");
  await session.send("Profiler.setSamplingInterval", { interval: Number(values.interval) });
  await session.send("Profiler.start");
  const { result, answered } = await window(async () => {
    const { profile } = await session.send<{ profile: Profile }>("Profiler.stop");
    return profile;
  });
  // the bundle wrangler dev runs (the profile's line numbers are its lines)
  const scripts = new Set(
    result.nodes.filter((n) => n.callFrame.url.endsWith("index.js")).map((n) => n.callFrame.scriptId),
  );
  await session.send("Debugger.enable");
  for (const scriptId of scripts) {
    const { scriptSource } = await session.send<{ scriptSource: string }>("Debugger.getScriptSource", {
      scriptId,
    });
    writeFileSync(`${values.out.replace(/\.cpuprofile$/, "")}.${scriptId}.js`, scriptSource);
  }
  await session.send("Debugger.disable");
  session.close();
  writeFileSync(values.out, JSON.stringify(result));
  log(`V8 profile of the Worker's isolate: ${values.out}`);
  console.log(summarize(result, Number(values.top), answered));

  if (values.perf) {
    const data = `${values.out.replace(/\.cpuprofile$/, "")}.perf.data`;
    const perf = spawn("perf", ["record", "-F", "999", "-g", "-o", data, "-p", String(pemba.serverPid)], {
      stdio: "ignore",
    });
    await new Promise((r) => setTimeout(r, 500));
    await window(async () => {
      perf.kill("SIGINT");
      await new Promise((done) => perf.once("exit", done));
    });
    const report = execFileSync(
      "perf",
      [
        "report",
        "-i",
        data,
        "--no-children",
        "--sort",
        "dso",
        "--stdio",
        "-g",
        "none",
        "--percent-limit",
        "0.7",
      ],
      { encoding: "utf8", maxBuffer: 64 << 20 },
    );
    console.log(`perf record of the Worker's workerd (${data}):`);
    console.log(
      report
        .split("\n")
        .filter((l) => l.trim() !== "" && !l.startsWith("#"))
        .slice(0, Number(values.top) + 10)
        .join("\n"),
    );
  }
} finally {
  await pemba.stop();
}
log(`load average after: ${loadAverage()}`);
