/** Process CPU and memory from /proc (Linux), for measuring a server from the outside. */

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  /** user + system CPU seconds. */
  cpuSeconds: number;
}

function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // comm is in parentheses and may contain spaces; the fields after it are space separated.
  const close = text.lastIndexOf(")");
  const comm = text.slice(text.indexOf("(") + 1, close);
  const fields = text.slice(close + 2).split(" ");
  // fields[0] = state (field 3); utime = field 14, stime = field 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return { pid, ppid: Number(fields[1]), comm, cpuSeconds: (utime + stime) / CLOCK_TICKS };
}

/** User and system CPU seconds used so far by one process, apart. */
export function cpuSplit(pid: number): { user: number; system: number } {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
}

/** User + system CPU seconds used so far by one process. */
export function cpuSeconds(pid: number): number {
  const stat = readStat(pid);
  if (stat === undefined) throw new Error(`process ${pid} is gone`);
  return stat.cpuSeconds;
}

/** Resident set size in MB (VmRSS). */
export function rssMegabytes(pid: number): number {
  return statusMegabytes(pid, "VmRSS");
}

/** The largest resident set size the process has had since it started, in MB (VmHWM). */
export function peakRssMegabytes(pid: number): number {
  return statusMegabytes(pid, "VmHWM");
}

function statusMegabytes(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status);
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** Every live descendant of `root` (children, grandchildren, ...). */
export function descendants(root: number): ProcStat[] {
  const all: ProcStat[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat) all.push(stat);
  }
  const found: ProcStat[] = [];
  const parents = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of all) {
      if (!parents.has(p.pid) && parents.has(p.ppid)) {
        parents.add(p.pid);
        found.push(p);
        grew = true;
      }
    }
  }
  return found;
}

/**
 * CPU seconds per process of the PostgreSQL server listening on `port`: the postmaster (found by its `-p <port>`
 * argument; pg_ctl daemonizes it, so it is not our descendant) and its backends, keyed by pid.
 */
export function postgresCpu(port: number): Map<number, number> {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    if (!/postgres$/.test(args[0] ?? "")) continue;
    const p = args.indexOf("-p");
    if (p < 0 || args[p + 1] !== String(port)) continue;
    const postmaster = Number(name);
    const cpu = new Map([[postmaster, cpuSeconds(postmaster)]]);
    for (const child of descendants(postmaster)) cpu.set(child.pid, child.cpuSeconds);
    return cpu;
  }
  throw new Error(`no PostgreSQL postmaster with -p ${port} found in /proc`);
}

/**
 * PostgreSQL CPU seconds used between two `postgresCpu` samples: for every process alive at the second sample, its
 * CPU minus what it had at the first (all of it for a backend started in between). A backend that exited in
 * between is left out (its CPU since the first sample cannot be read any more; an idle pooled connection closing
 * is the usual case), so the figure is a floor when connections come and go during the window.
 */
export function postgresCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, seconds] of after) sum += seconds - (before.get(pid) ?? 0);
  return sum;
}

/** Samples RSS of `pid` every `everyMs` until stopped; returns the maximum seen. */
export interface RssSample {
  /** Seconds since sampling started. */
  seconds: number;
  megabytes: number;
}

/** Samples a process's RSS every `everyMs`; `stop()` answers the maximum, `samples()` every reading in order. */
export function sampleRss(pid: number, everyMs = 500): { stop(): number; samples(): readonly RssSample[] } {
  const started = Date.now();
  const readings: RssSample[] = [];
  const read = () => {
    try {
      readings.push({ seconds: (Date.now() - started) / 1000, megabytes: rssMegabytes(pid) });
    } catch {
      // process exited
    }
  };
  read();
  const timer = setInterval(read, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(...readings.map((r) => r.megabytes));
    },
    samples: () => readings,
  };
}

/**
 * Where the RSS rose by at least `minMegabytes` within `withinSeconds` (a step: a new high-water mark the
 * allocator keeps, rather than a steady leak): the reading where each step starts, one per step.
 */
export function rssSteps(
  samples: readonly RssSample[],
  minMegabytes: number,
  withinSeconds: number,
): { seconds: number; from: number; to: number }[] {
  const steps: { seconds: number; from: number; to: number }[] = [];
  /** The highest reading within `withinSeconds` after reading `i`. */
  const highestAfter = (i: number): number => {
    let top = i;
    for (let j = i + 1; j < samples.length && samples[j]!.seconds - samples[i]!.seconds <= withinSeconds; j++)
      if (samples[j]!.megabytes > samples[top]!.megabytes) top = j;
    return top;
  };
  let i = 0;
  while (i < samples.length) {
    let top = highestAfter(i);
    if (samples[top]!.megabytes - samples[i]!.megabytes < minMegabytes) {
      i++;
      continue;
    }
    // the step starts at the last reading before the rise, and lasts while the RSS keeps rising within the window
    let start = i;
    while (start + 1 < top && samples[start + 1]!.megabytes <= samples[start]!.megabytes) start++;
    for (let next = highestAfter(top); next !== top; next = highestAfter(top)) top = next;
    steps.push({
      seconds: samples[start]!.seconds,
      from: samples[start]!.megabytes,
      to: samples[top]!.megabytes,
    });
    i = top + 1;
  }
  return steps;
}

/** Least-squares slope of RSS in MB per 10 minutes over the readings at or after `fromSeconds`. */
export function rssSlopePer10Minutes(samples: readonly RssSample[], fromSeconds: number): number {
  const window = samples.filter((r) => r.seconds >= fromSeconds);
  if (window.length < 2) return Number.NaN;
  const n = window.length;
  const meanT = window.reduce((a, r) => a + r.seconds, 0) / n;
  const meanM = window.reduce((a, r) => a + r.megabytes, 0) / n;
  let num = 0;
  let den = 0;
  for (const r of window) {
    num += (r.seconds - meanT) * (r.megabytes - meanM);
    den += (r.seconds - meanT) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 600;
}

/** RSS over time as a text chart: one row per `stepSeconds`, the reading nearest its start and a bar. */
export function rssTextChart(samples: readonly RssSample[], stepSeconds: number): string {
  if (samples.length === 0) return "no readings";
  const max = Math.max(...samples.map((r) => r.megabytes));
  const rows: string[] = [];
  const end = samples.at(-1)!.seconds;
  for (let t = 0; t <= end + 1e-9; t += stepSeconds) {
    const r = samples.reduce((best, x) => (Math.abs(x.seconds - t) < Math.abs(best.seconds - t) ? x : best));
    const bar = "#".repeat(Math.round((50 * r.megabytes) / max));
    rows.push(`${(t / 60).toFixed(1).padStart(6)} min ${r.megabytes.toFixed(0).padStart(6)} MB ${bar}`);
  }
  return rows.join("\n");
}
