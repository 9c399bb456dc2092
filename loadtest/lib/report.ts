/** Pieces of the markdown reports: k6-style figures, the machine, and the report file itself. */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { type K6Summary, k6Binary, LOADTEST_DIR, metric } from "./k6.ts";

/**
 * Where `pnpm loadtest` writes its reports unless told: under loadtest/out/, which git ignores, so a run leaves no
 * untracked files. The reports RESULTS.md cites are copied into loadtest/reports/ and committed.
 */
export const DEFAULT_REPORT_DIR = join(LOADTEST_DIR, "out", "reports");

/** A duration in k6's summary style: 372.72µs, 3.91ms, 1.01s. */
export function formatMs(ms: number): string {
  if (ms < 1) return `${(ms * 1000).toFixed(2)}µs`;
  if (ms < 1000) return `${ms.toFixed(2)}ms`;
  return `${(ms / 1000).toFixed(2)}s`;
}

/** A trend as k6 prints it (`avg=.. min=.. med=.. max=.. p(90)=.. p(95)=..`, plus p(99)). */
export function trendText(summary: K6Summary, name = "http_req_duration"): string {
  const stats = ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"];
  return stats.map((s) => `${s}=${formatMs(metric(summary, name, s))}`).join(" ");
}

export interface ChecksFigure {
  passes: number;
  fails: number;
  percent: number;
}

export function checksOf(summary: K6Summary): ChecksFigure {
  const passes = metric(summary, "checks", "passes");
  const fails = metric(summary, "checks", "fails");
  return { passes, fails, percent: passes + fails === 0 ? 0 : (100 * passes) / (passes + fails) };
}

export function checksText(summary: K6Summary): string {
  const c = checksOf(summary);
  return `${c.percent.toFixed(2)}% (${c.passes} out of ${c.passes + c.fails})`;
}

/** `count (rate/s)` of a k6 counter. */
export function counterText(summary: K6Summary, name: string): string {
  return `${metric(summary, name, "count")} (${metric(summary, name, "rate").toFixed(2)}/s)`;
}

export function k6Version(): string {
  const text = execFileSync(k6Binary(), ["version"], { encoding: "utf8" });
  return /k6 (v[\d.]+)/.exec(text)?.[1] ?? text.trim();
}

export function gitCommit(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: LOADTEST_DIR,
      encoding: "utf8",
    });
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], {
      cwd: LOADTEST_DIR,
      encoding: "utf8",
    });
    return `${head.trim()}${dirty.trim() === "" ? "" : " (with uncommitted changes)"}`;
  } catch {
    return "unknown";
  }
}

export function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
}

/** One line: CPU model and count, memory, Node and k6 versions. */
export function machineText(): string {
  const cpu = cpus();
  const gb = (totalmem() / 2 ** 30).toFixed(0);
  return `${cpu.length} x ${cpu[0]?.model.trim() ?? "unknown CPU"}, ${gb} GB RAM, Node ${process.version}, k6 ${k6Version()}; k6 runs on the same machine as the server`;
}

/** A markdown table from a header row and rows. */
export function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.map((c) => String(c)).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** Writes `<dir>/<name>.md` and the charts beside it; returns the markdown path. */
export function writeReport(
  dir: string,
  name: string,
  markdown: string,
  charts: { file: string; svg: string }[],
): string {
  mkdirSync(dir, { recursive: true });
  for (const chart of charts) writeFileSync(join(dir, chart.file), chart.svg);
  const path = join(dir, `${name}.md`);
  writeFileSync(path, markdown);
  return path;
}
