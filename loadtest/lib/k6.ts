/** Runs k6 scripts as child processes and reads their end-of-test summaries. */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const LOADTEST_DIR = resolve(import.meta.dirname, "..");

export function k6Binary(): string {
  const candidates = [process.env.K6, "/work/tools/bin/k6", join(LOADTEST_DIR, ".bin", "k6")];
  for (const c of candidates) if (c && existsSync(c)) return c;
  throw new Error("k6 not found: set K6=/path/to/k6 or run loadtest/scripts/install-k6.sh loadtest/.bin");
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

/** `k6 run <script>` with `-e` variables; output is streamed through `onLine` and kept. */
export async function runK6(
  script: string,
  env: Record<string, string | number>,
  onLine: (line: string) => void = () => {},
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
    ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
    join(LOADTEST_DIR, "k6", script),
  ];
  const started = performance.now();
  const child = spawn(k6Binary(), args, { stdio: ["ignore", "pipe", "pipe"] });
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
  return { exitCode, summary, output, seconds };
}

export function metric(summary: K6Summary, name: string, stat: string): number {
  return summary.metrics[name]?.[stat] ?? 0;
}
