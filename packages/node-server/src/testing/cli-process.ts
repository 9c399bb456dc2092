/**
 * Runs the real `pemba` CLI as a child process: the bundle that `pnpm pemba` runs (built by the project's
 * globalSetup, test/global-setup.ts). For this package's tests, the SDK's tests and benchmarks.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO_DIR = resolve(import.meta.dirname, "../../../..");
const CLI = resolve(REPO_DIR, "packages/node-server/dist/pemba.mjs");

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout JSON log line that `match` accepts. */
  waitForLog(
    match: (entry: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  exited: Promise<CliResult>;
}

/**
 * The CLI with `args`; `launcher` is a command that runs it (e.g. `unshare -m sh -c '...; exec "$@"' sh`): the
 * node command line is appended to it.
 */
export function startCli(
  args: string[],
  env: Record<string, string> = {},
  cwd = REPO_DIR,
  launcher: string[] = [],
): CliProcess {
  const command = [...launcher, process.execPath, CLI, ...args];
  const child = spawn(command[0]!, command.slice(1), {
    cwd,
    env: { ...cleanEnv(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const listeners = new Set<() => void>();
  child.stdout!.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const l of listeners) l();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<CliResult>((done) =>
    child.on("close", (code, signal) => {
      for (const l of listeners) l();
      done({ code, signal, stdout, stderr });
    }),
  );
  const logEntries = () =>
    stdout
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForLog(match, timeoutMs = 30_000) {
      return new Promise((done, fail) => {
        const timer = setTimeout(() => {
          listeners.delete(check);
          fail(
            new Error(`no matching log line after ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`),
          );
        }, timeoutMs);
        const check = () => {
          const found = logEntries().find(match);
          if (found) {
            clearTimeout(timer);
            listeners.delete(check);
            done(found);
          } else if (child.exitCode !== null) {
            clearTimeout(timer);
            listeners.delete(check);
            fail(new Error(`pemba exited with ${child.exitCode}\nstdout:\n${stdout}\nstderr:\n${stderr}`));
          }
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** Runs a command to completion. */
export function runCli(args: string[], env: Record<string, string> = {}, cwd = REPO_DIR): Promise<CliResult> {
  return startCli(args, env, cwd).exited;
}

/** `pemba serve` with the given flags; resolves once it logged its URL. */
export async function startServe(
  args: string[],
  env: Record<string, string> = {},
  launcher: string[] = [],
): Promise<CliProcess & { url: string }> {
  // no gRPC port unless the test asks for one: the default (3478) is one port for every server at once
  const proc = startCli(
    ["serve", "--port", "0", ...args],
    { PEMBA_GRPC_PORT: "0", ...env },
    REPO_DIR,
    launcher,
  );
  const line = await proc.waitForLog((e) => typeof e.url === "string");
  return Object.assign(proc, { url: line.url as string });
}

export interface ScratchServer {
  url: string;
  /** Stops the server and removes its database. */
  close(): Promise<void>;
}

/** `pemba serve` on a throwaway SQLite file in a fresh folder, with `args` added. */
export async function startScratchServe(
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<ScratchServer> {
  const dir = mkdtempSync(join(tmpdir(), "pemba-scratch-"));
  const proc = await startServe(["--database", join(dir, "authz.db"), ...args], env);
  return {
    url: proc.url,
    async close() {
      if (proc.child.exitCode === null) proc.child.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The test runner's environment without PEMBA_* settings that would leak into the child. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith("PEMBA_")) delete env[key];
  return env;
}
