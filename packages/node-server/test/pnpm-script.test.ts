/**
 * The root `pnpm pemba` script as a user runs it: `pnpm pemba serve &` then `kill $!` signals pnpm, not the server.
 * The script execs node (no shell in between), so pnpm's forwarded SIGTERM reaches the server itself.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { REPO_DIR } from "./cli-process.ts";

/** pnpm as the test runner was started with it (npm_execpath), else the `pnpm` on PATH. */
function pnpmCommand(): [string, string[]] {
  const execPath = process.env.npm_execpath;
  if (execPath?.includes("pnpm"))
    return /\.[cm]?js$/.test(execPath) ? [process.execPath, [execPath]] : [execPath, []];
  return ["pnpm", []];
}

/** Pids of the live descendants of `pid` (Linux /proc). */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited meanwhile
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf)
      if (parent === p) {
        found.push(child);
        walk(child);
      }
  };
  walk(pid);
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const portOpen = (port: number) =>
  new Promise<boolean>((done) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => {
      socket.destroy();
      done(true);
    });
    socket.on("error", () => done(false));
  });

describe("pnpm pemba", () => {
  it("SIGTERM to the pnpm process stops the server: no process left, port closed", async () => {
    const [command, prefix] = pnpmCommand();
    const pnpm = spawn(command, [...prefix, "pemba", "serve", "--database", "memory:", "--port", "0"], {
      cwd: REPO_DIR,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    pnpm.stdout.on("data", (c: Buffer) => {
      output += c.toString();
    });
    pnpm.stderr.on("data", (c: Buffer) => {
      output += c.toString();
    });
    // "exit", not "close": a server left behind would keep the pipes open
    const exited = new Promise<void>((done) => pnpm.on("exit", () => done()));
    let serverPids: number[] = [];
    try {
      const deadline = Date.now() + 60_000;
      let port = 0;
      while (port === 0) {
        const m = /pemba listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
        if (m) port = Number(m[1]);
        else if (pnpm.exitCode !== null || Date.now() > deadline) throw new Error(`no server:\n${output}`);
        else await new Promise((r) => setTimeout(r, 50));
      }
      serverPids = descendants(pnpm.pid as number);
      expect(serverPids.length).toBeGreaterThan(0);
      expect(await portOpen(port)).toBe(true);

      pnpm.kill("SIGTERM");
      await exited;
      const gone = Date.now() + 10_000;
      while (serverPids.some(alive) && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
      expect(serverPids.filter(alive)).toEqual([]);
      expect(await portOpen(port)).toBe(false);
      expect(output).toContain("pemba stopped");
    } finally {
      for (const pid of [pnpm.pid as number, ...serverPids]) if (alive(pid)) process.kill(pid, "SIGKILL");
    }
  });
});
