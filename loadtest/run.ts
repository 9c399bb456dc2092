/**
 * One command per seed benchmark:
 *
 *   pnpm loadtest <permify|zanzigo|flagd|zitadel> [--target node-sqlite|node-postgres|node-postgres-replicas|node-libsql-replicated|worker] [--duration 60s]
 *                 [--rate 500] [--protocol http|grpc] [--smoke] [--report-dir loadtest/out/reports]
 *
 * Builds k6 when it is missing, starts the target on 127.0.0.1 (PostgreSQL or `wrangler dev` as needed), seeds,
 * runs the scenario's k6 scripts, stops everything it started, and writes
 * `<report-dir>/<scenario>-<target>-<date>.md` with a latency-over-time chart per phase (SVG from k6's JSON
 * output). Exit code 1 when a scenario's checks failed. See loadtest/README.md for each scenario.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { latencyBuckets, latencySvg } from "./lib/chart.ts";
import { type CpuProfile, flameGraphSvg } from "./lib/flamegraph.ts";
import { ensureK6, runK6 } from "./lib/k6.ts";
import { DEFAULT_REPORT_DIR, gitCommit, loadAverage, machineText, writeReport } from "./lib/report.ts";
import { parseDuration, type Scenario, type ScenarioContext } from "./lib/scenario.ts";
import { parseTarget, startTarget, type Target } from "./lib/targets.ts";
import { flagd } from "./scenarios/flagd.ts";
import { permify } from "./scenarios/permify.ts";
import { zanzigo } from "./scenarios/zanzigo.ts";
import { zitadel } from "./scenarios/zitadel.ts";

const SCENARIOS: Record<string, Scenario> = { permify, zanzigo, flagd, zitadel };

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    target: { type: "string", default: "node-sqlite" },
    duration: { type: "string" },
    rate: { type: "string" },
    protocol: { type: "string", default: "http" },
    smoke: { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
    "report-dir": { type: "string", default: DEFAULT_REPORT_DIR },
  },
});
const scenarioName = positionals[0] ?? "";
const scenario = SCENARIOS[scenarioName];
if (scenario === undefined || positionals.length !== 1) {
  console.error(
    `usage: pnpm loadtest <${Object.keys(SCENARIOS).join("|")}> [--target node-sqlite|node-postgres|node-postgres-replicas|node-libsql-replicated|worker] [--duration 60s] [--rate 500] [--protocol http|grpc] [--smoke]`,
  );
  process.exit(2);
}
const target = parseTarget(values.target!);
const rate = values.rate === undefined ? undefined : Number(values.rate);
if (rate !== undefined && !(rate > 0)) throw new Error(`bad --rate "${values.rate}": a positive number`);
const durationSeconds = values.duration === undefined ? undefined : parseDuration(values.duration);
const protocol = values.protocol === "grpc" ? "grpc" : "http";
if (values.protocol !== protocol) throw new Error(`bad --protocol "${values.protocol}": http or grpc`);
if (protocol === "grpc" && target === "worker")
  throw new Error("--protocol grpc needs a node target (the Worker answers Connect and gRPC-Web, not gRPC)");
if (protocol === "grpc" && scenarioName !== "permify")
  throw new Error("--protocol grpc: the permify scenario has the gRPC check script");
if (values.profile && target === "worker")
  throw new Error("--profile needs a node target (node-sqlite, node-postgres)");

const started = new Date();
// the code that runs is the checkout as it is now (a commit made while the run goes on is not what ran)
const commit = gitCommit();
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const settings = Object.entries(process.env)
  .filter(([name]) => name.startsWith("PEMBA_SOAK_") || name.startsWith("PEMBA_REPLICA"))
  .map(([name, value]) => `${name}=${value} `)
  .join("");
const command = `${settings}pnpm loadtest ${process.argv.slice(2).join(" ")}`;
ensureK6(log);
const workDir = mkdtempSync(join(tmpdir(), `pemba-loadtest-${scenarioName}-`));
const profileDir = join(workDir, "profile");
const profileFlags = values.profile
  ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`, "--heap-prof", `--heap-prof-dir=${profileDir}`]
  : [];
const cleanups: (() => unknown)[] = [];
const phases = new Map<string, string[]>();
let runs = 0;
const loadBefore = loadAverage();

const context: ScenarioContext = {
  target,
  smoke: values.smoke!,
  durationSeconds,
  rate,
  protocol,
  workDir,
  log,
  async start(options) {
    log(`starting ${target} ...`);
    const nodeFlags = [...(options.nodeFlags ?? []), ...profileFlags];
    const t: Target = await startTarget(target, { ...options, nodeFlags, grpc: protocol === "grpc" });
    cleanups.push(async () => {
      await t.stop();
      log(`${target} stopped`);
    });
    log(`${t.description} at ${t.url} (server pid ${t.serverPid})`);
    return t;
  },
  defer(cleanup) {
    cleanups.push(cleanup);
  },
  async k6(script, env, phase, options = {}) {
    const jsonOut = join(workDir, `k6-${++runs}.json.gz`);
    let files = phases.get(phase);
    if (files === undefined) {
      files = [];
      phases.set(phase, files);
    }
    files.push(jsonOut);
    // k6's console output, warnings and errors; its end-of-test summary goes into the report instead
    const onLine = (line: string) => {
      if (line.includes("level=")) log(`  k6: ${line}`);
    };
    return runK6(script, env, onLine, { ...options, jsonOut });
  },
};

/** Copies the server's CPU and heap profiles beside the report, with a flame graph; returns the report section. */
function saveProfiles(from: string, to: string, name: string): string[] {
  const files = existsSync(from) ? readdirSync(from) : [];
  const cpu = files.find((f) => f.endsWith(".cpuprofile"));
  const heap = files.find((f) => f.endsWith(".heapprofile"));
  const lines: string[] = [];
  if (cpu !== undefined) {
    copyFileSync(join(from, cpu), join(to, `${name}.cpuprofile`));
    const profile = JSON.parse(readFileSync(join(from, cpu), "utf8")) as CpuProfile;
    writeFileSync(
      join(to, `${name}-flame.svg`),
      flameGraphSvg(profile, `pemba serve: ${scenarioName} on ${target}`),
    );
    lines.push(
      `- CPU profile: [${name}.cpuprofile](${name}.cpuprofile) (Chrome DevTools or speedscope.app); flame graph: [${name}-flame.svg](${name}-flame.svg)`,
    );
  }
  if (heap !== undefined) {
    copyFileSync(join(from, heap), join(to, `${name}.heapprofile`));
    lines.push(
      `- heap profile (sampling): [${name}.heapprofile](${name}.heapprofile) (Chrome DevTools, Memory tab)`,
    );
  }
  if (lines.length === 0) lines.push("- no profile was written (the server did not exit normally)");
  return [
    `## Server profile (node --cpu-prof --heap-prof)

${lines.join("\n")}`,
  ];
}

async function cleanUp(): Promise<void> {
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()!();
    } catch (e) {
      log(`cleanup failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping everything started ...`);
    void cleanUp().finally(() => process.exit(130));
  });
}

let exitCode = 0;
try {
  log(`${scenarioName} on ${target}${values.smoke ? " (smoke)" : ""}; load average ${loadBefore}`);
  const result = await scenario.run(context);
  await cleanUp();
  const stamp = started
    .toISOString()
    .slice(0, 16)
    .replace(/[:T]/g, "-")
    .replace(/-(\d\d)$/, "$1");
  const name = `${scenarioName}-${target}-${stamp}${values.smoke ? "-smoke" : ""}`;
  const charts: { file: string; svg: string }[] = [];
  const chartLines: string[] = [];
  for (const [phase, files] of phases) {
    const file = `${name}-${phase.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}.svg`;
    const buckets = await latencyBuckets(files);
    charts.push({ file, svg: latencySvg(buckets, `${scenarioName} on ${target}: ${phase}`) });
    chartLines.push(`### ${phase}\n\n![${phase}: latency over time](${file})`);
  }
  const extraCharts = (result.charts ?? []).map((c) => {
    const file = `${name}-${c.suffix}.svg`;
    charts.push({ file, svg: c.svg });
    return `## ${c.caption}\n\n![${c.caption}](${file})`;
  });
  const reportDir = resolve(values["report-dir"]!);
  mkdirSync(reportDir, { recursive: true });
  const profileSection = values.profile ? saveProfiles(profileDir, reportDir, name) : [];
  const minutes = ((Date.now() - started.getTime()) / 60_000).toFixed(1);
  const markdown = [
    `# ${scenarioName} on ${target}${values.smoke ? " (smoke)" : ""}: ${started.toISOString().slice(0, 16)} UTC`,
    scenario.title,
    [
      `- command: \`${command}\``,
      `- commit: ${commit}`,
      `- machine: ${machineText()}`,
      `- load average before / after: ${loadBefore} / ${loadAverage()}; wall time ${minutes} min`,
      `- result: ${result.failures.length === 0 ? "passed" : `FAILED: ${result.failures.join("; ")}`}`,
    ].join("\n"),
    ...result.sections,
    ...extraCharts,
    ...profileSection,
    `## Latency over time\n\nhttp_req_duration p50/p95/p99 and requests/s per time bucket, from k6's JSON output.\n\n${chartLines.join("\n\n")}`,
  ].join("\n\n");
  const path = writeReport(reportDir, name, `${markdown}\n`, charts);
  log(`report: ${relative(process.cwd(), path)}`);
  if (result.failures.length > 0) {
    for (const f of result.failures) log(`FAILED: ${f}`);
    exitCode = 1;
  }
} catch (e) {
  log(`error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  exitCode = 1;
} finally {
  await cleanUp();
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(exitCode);
