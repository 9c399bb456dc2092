/** Starts the servers under test as child processes on 127.0.0.1 and stops them. */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { resolve } from "node:path";
import { freePort } from "@pemba/core/testing/node";
import { LOADTEST_DIR } from "./k6.ts";

export const REPO_DIR = resolve(LOADTEST_DIR, "..");
const NODE_FLAGS = ["--experimental-strip-types", "--no-warnings"];

export interface ServerProcess {
  url: string;
  pid: number;
  /** SIGTERM, then wait for the exit code. */
  stop(): Promise<number>;
}

async function waitReady(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${log()}`);
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`server at ${url} not ready after 60 s:\n${log()}`);
}

function wrap(child: ChildProcess, url: string): ServerProcess {
  return {
    url,
    pid: child.pid!,
    stop() {
      if (child.exitCode !== null) return Promise.resolve(child.exitCode);
      return new Promise((done) => {
        child.once("exit", (code) => done(code ?? 1));
        child.kill("SIGTERM");
      });
    },
  };
}

/** Builds the bundled CLI (packages/node-server/dist/pemba.mjs, what `pnpm pemba` runs) when it is stale. */
export function buildPemba(repo = REPO_DIR): string {
  execFileSync(process.execPath, ["packages/node-server/scripts/build.mjs", "--quiet"], {
    cwd: repo,
    stdio: "inherit",
  });
  return "packages/node-server/dist/pemba.mjs";
}

/**
 * `pemba serve` (the bundled CLI, as `pnpm pemba serve` runs it) on 127.0.0.1 with `database`; stdout discarded.
 * `repo`: the checkout whose CLI runs (another worktree for before/after runs).
 */
export async function startPemba(
  database: string,
  extraArgs: string[] = [],
  nodeFlags: string[] = [],
  repo = REPO_DIR,
): Promise<ServerProcess> {
  const port = await freePort();
  const args = [
    ...nodeFlags,
    buildPemba(repo),
    "serve",
    "--database",
    database,
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    ...extraArgs,
  ];
  // no gRPC port unless extraArgs name one (a variable: a checkout from before the gRPC port ignores it)
  const child = spawn(process.execPath, args, {
    cwd: repo,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, PEMBA_GRPC_PORT: "0" },
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  await waitReady(`${url}/metrics`, child, () => stderr);
  return wrap(child, url);
}

/** A bare node:http server answering every request with a fixed check response (the cost floor). */
export async function startBareServer(): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [...NODE_FLAGS, resolve(LOADTEST_DIR, "bare-server.ts"), String(port)],
    {
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url, child, () => "");
  return wrap(child, url);
}
