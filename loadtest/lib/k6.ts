/** Runs k6 scripts as child processes and reads their end-of-test summaries. */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";

export const LOADTEST_DIR = resolve(import.meta.dirname, "..");
const INSTALL_DIR = join(LOADTEST_DIR, ".bin");

/** k6 from `K6=`, loadtest/.bin (where install-k6.sh puts it), or PATH; undefined when there is none. */
export function findK6(): string | undefined {
  const onPath = (process.env.PATH ?? "").split(delimiter).map((dir) => join(dir, "k6"));
  for (const c of [process.env.K6, join(INSTALL_DIR, "k6"), ...onPath]) if (c && existsSync(c)) return c;
  return undefined;
}

export function k6Binary(): string {
  const found = findK6();
  if (found === undefined) {
    throw new Error("k6 not found: set K6=/path/to/k6 or run loadtest/scripts/install-k6.sh loadtest/.bin");
  }
  return found;
}

/** k6's path; builds it into loadtest/.bin with `go install go.k6.io/k6@v1.8.1` (install-k6.sh) when missing. */
export function ensureK6(log: (line: string) => void = console.log): string {
  const found = findK6();
  if (found !== undefined) return found;
  log("k6 not found: building it with go install (a few minutes the first time) ...");
  execFileSync("bash", [join(LOADTEST_DIR, "scripts", "install-k6.sh"), INSTALL_DIR], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  return k6Binary();
}

/** The parts of `k6 run --summary-export` we read. */
export interface K6Summary {
  metrics: Record<string, Record<string, number>>;
}

export interface K6Run {
  exitCode: number;
  summary: K6Summary;
  output: string;
  seconds: number;
}

export interface K6Options {
  /** Also write every metric sample to this file (`--out json=`; gzipped when it ends in .gz), e.g. for charts. */
  jsonOut?: string;
  /** Run k6 on these CPUs only (`taskset -c <cpus>`), e.g. away from a server pinned to CPU 0. */
  cpus?: string;
}

/** `k6 run <script>` with `-e` variables; output is streamed through `onLine` and kept. */
export async function runK6(
  script: string,
  env: Record<string, string | number>,
  onLine: (line: string) => void = () => {},
  options: K6Options = {},
): Promise<K6Run> {
  const dir = mkdtempSync(join(tmpdir(), "pemba-k6-"));
  const summaryFile = join(dir, "summary.json");
  const args = [
    "run",
    "--quiet",
    "--no-color",
    "--no-usage-report",
    "--address",
    "",
    "--summary-trend-stats",
    "avg,min,med,p(90),p(95),p(99),max",
    "--summary-export",
    summaryFile,
    ...(options.jsonOut === undefined ? [] : ["--out", `json=${options.jsonOut}`]),
    ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
    join(LOADTEST_DIR, "k6", script),
  ];
  const started = performance.now();
  const [command, commandArgs] =
    options.cpus === undefined ? [k6Binary(), args] : ["taskset", ["-c", options.cpus, k6Binary(), ...args]];
  const child = spawn(command, commandArgs, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    output += text;
    for (const line of text.split("\n")) if (line.trim() !== "") onLine(line);
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const exitCode = await new Promise<number>((done) => child.on("close", (code) => done(code ?? 1)));
  const seconds = (performance.now() - started) / 1000;
  const summary: K6Summary = existsSync(summaryFile)
    ? (JSON.parse(readFileSync(summaryFile, "utf8")) as K6Summary)
    : { metrics: {} };
  rmSync(dir, { recursive: true, force: true });
  return { exitCode, summary, output, seconds };
}

export function metric(summary: K6Summary, name: string, stat: string): number {
  return summary.metrics[name]?.[stat] ?? 0;
}
