/** What a scenario of `pnpm loadtest` gets from the runner, and what it hands back. */
import type { K6Options, K6Run } from "./k6.ts";
import type { Target, TargetName, TargetOptions } from "./targets.ts";

export interface ScenarioSettings {
  target: TargetName;
  /** Small data and runs of a few seconds (the CI smoke: at most ~30 s per scenario). */
  smoke: boolean;
  /** `--duration` in seconds, when given (each scenario says what it sets). */
  durationSeconds?: number;
  /** `--rate`, when given (each scenario says what it sets). */
  rate?: number;
  /** `--protocol`: the open-model checks over HTTP (default) or over gRPC (node targets; the permify scenario). */
  protocol: "http" | "grpc";
}

export interface ScenarioContext extends ScenarioSettings {
  /** A scratch directory, removed at the end. */
  workDir: string;
  log(line: string): void;
  /** Starts the target with these options; the runner stops it at the end. */
  start(options: TargetOptions): Promise<Target>;
  /** Runs at the end, before the target stops (last registered first). */
  defer(cleanup: () => unknown): void;
  /**
   * Runs a k6 script of loadtest/k6 with these `-e` variables; its samples go into the latency chart of `phase`
   * (one chart per phase, in the order phases first appear).
   */
  k6(
    script: string,
    env: Record<string, string | number>,
    phase: string,
    options?: Omit<K6Options, "jsonOut">,
  ): Promise<K6Run>;
}

export interface ScenarioResult {
  /** Markdown sections of the report (tables, notes). */
  sections: string[];
  /** Why the run counts as failed (empty: passed). */
  failures: string[];
  /** More charts: written as `<report name>-<suffix>.svg` beside the report, each under its caption. */
  charts?: { suffix: string; caption: string; svg: string }[];
}

export interface Scenario {
  /** What it reproduces, one line (the report's subtitle). */
  title: string;
  run(context: ScenarioContext): Promise<ScenarioResult>;
}

/** `--duration` if given, else the smoke or the full default. */
export function seconds(context: ScenarioSettings, full: number, smoke: number): number {
  return context.durationSeconds ?? (context.smoke ? smoke : full);
}

/** "90" -> 90, "90s" -> 90, "2m" -> 120, "1h" -> 3600. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(text.trim());
  if (match === null) throw new Error(`bad duration "${text}": a number of seconds, or e.g. 90s, 5m, 1h`);
  const factor = match[2] === "h" ? 3600 : match[2] === "m" ? 60 : 1;
  return Number(match[1]) * factor;
}
