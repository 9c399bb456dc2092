/**
 * Fixed CPU for a server under test (Linux): pinning to CPUs with `taskset` (every thread), and a CPU quota (e.g.
 * half a CPU) through a cgroup of its own: cgroup v2's cpu.max, or v1's cpu.cfs_quota_us. A quota needs a writable
 * cgroup file system (root, or a delegated cgroup); `cpuQuota` says why when it cannot.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Pins every thread of `pid` to `cpus` (a taskset list, e.g. "0"). */
export function pinToCpus(pid: number, cpus: string): void {
  execFileSync("taskset", ["-a", "-p", "-c", cpus, String(pid)], { stdio: "ignore" });
}

/** Undoes pinToCpus: every CPU of the machine again. */
export function unpin(pid: number, cpuCount: number): void {
  pinToCpus(pid, `0-${cpuCount - 1}`);
}

export interface CpuQuota {
  /** Where the quota lives, for the report. */
  path: string;
  /** Scheduler periods so far, and how many of them the quota cut short (cpu.stat). */
  throttling(): { periods: number; throttled: number };
  /** Moves the process back to its cgroup and removes the quota's cgroup. */
  release(): void;
}

const PERIOD_US = 100_000;

interface Hierarchy {
  v2: boolean;
  root: string;
}

function hierarchy(): Hierarchy {
  const v2 = existsSync("/sys/fs/cgroup/cgroup.controllers");
  const root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu";
  if (!existsSync(join(root, "cgroup.procs"))) throw new Error(`no cpu cgroup hierarchy at ${root}`);
  return { v2, root };
}

/** The directory of `pid`'s cgroup in the cpu hierarchy (from /proc/<pid>/cgroup). */
function cgroupOf(pid: number, { v2, root }: Hierarchy): string {
  for (const line of readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n")) {
    const [, controllers, path] = line.split(":");
    if (path === undefined) continue;
    if (v2 ? controllers === "" : controllers!.split(",").includes("cpu")) return join(root, path);
  }
  return root;
}

/** Undefined when a CPU quota can be set here, else why not (creates and removes an empty cgroup). */
export function cpuQuotaUnavailable(): string | undefined {
  try {
    const dir = join(hierarchy().root, `pemba-loadtest-probe-${process.pid}`);
    mkdirSync(dir);
    rmdirSync(dir);
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/** Limits `pid` (all its threads) to `cpus` CPUs' worth of time per 100 ms; throws with the reason if impossible. */
export function cpuQuota(pid: number, cpus: number): CpuQuota {
  const h = hierarchy();
  const { v2, root } = h;
  const home = cgroupOf(pid, h);
  const dir = join(root, `pemba-loadtest-${pid}`);
  mkdirSync(dir);
  try {
    const quota = Math.round(cpus * PERIOD_US);
    if (v2) {
      const enabled = readFileSync(join(root, "cgroup.subtree_control"), "utf8");
      if (!enabled.split(/\s+/).includes("cpu")) writeFileSync(join(root, "cgroup.subtree_control"), "+cpu");
      writeFileSync(join(dir, "cpu.max"), `${quota} ${PERIOD_US}`);
    } else {
      writeFileSync(join(dir, "cpu.cfs_period_us"), String(PERIOD_US));
      writeFileSync(join(dir, "cpu.cfs_quota_us"), String(quota));
    }
    writeFileSync(join(dir, "cgroup.procs"), String(pid));
  } catch (e) {
    rmdirSync(dir);
    throw e;
  }
  return {
    path: dir,
    throttling() {
      const stat = readFileSync(join(dir, "cpu.stat"), "utf8");
      const field = (name: string) => Number(new RegExp(`^${name} (\\d+)`, "m").exec(stat)?.[1] ?? 0);
      return { periods: field("nr_periods"), throttled: field("nr_throttled") };
    },
    release() {
      try {
        writeFileSync(join(home, "cgroup.procs"), String(pid));
      } catch {
        // the process has exited
      }
      rmdirSync(dir);
    },
  };
}
