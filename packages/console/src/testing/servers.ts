/**
 * The servers the console's tests and bench open the page on, started as users start them: the built `pemba serve`
 * (what `pnpm pemba serve` runs) and the Worker's `pnpm --filter @pemba/worker run dev`. They run as commands, so
 * the console package depends on neither runtime (both depend on it, for its assets).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const REPO_DIR = resolve(import.meta.dirname, "../../../..");

export interface Served {
  url: string;
  close(): Promise<void>;
}

/**
 * A free TCP port. Its own copy rather than @pemba/core/testing/node's: the console's type check runs with the DOM
 * library, under which core's Node test servers do not compile.
 */
function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** Builds the `pemba` bundle when its sources changed (the console project's globalSetup and the bench call it). */
export function buildPemba(): void {
  execFileSync(process.execPath, [join(REPO_DIR, "packages/node-server/scripts/build.mjs"), "--quiet"], {
    stdio: "inherit",
  });
}

/** Output of a child, and its end. */
function watch(child: ChildProcess) {
  let output = "";
  child.stdout!.on("data", (c: Buffer) => {
    output += c.toString();
  });
  child.stderr!.on("data", (c: Buffer) => {
    output += c.toString();
  });
  const exited = new Promise<void>((done) => child.on("close", () => done()));
  return { output: () => output, exited };
}

/** SIGTERM, then waits for the exit (the servers exit on it: pemba serve and the Worker's dev script alike). */
async function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  await exited;
}

/** `pemba serve --database memory:` on a free port, gRPC off, with `args` added (e.g. `--auth-keys k1`). */
export async function startNodeServer(args: string[] = []): Promise<Served> {
  const child = spawn(
    process.execPath,
    [
      join(REPO_DIR, "packages/node-server/dist/pemba.mjs"),
      "serve",
      "--port",
      "0",
      "--grpc-port",
      "0",
      "--database",
      "memory:",
      ...args,
    ],
    { cwd: REPO_DIR, stdio: ["ignore", "pipe", "pipe"] },
  );
  const { output, exited } = watch(child);
  for (let i = 0; i < 600 && child.exitCode === null; i++) {
    const url = /"url":"(http:[^"]+)"/.exec(output())?.[1];
    if (url !== undefined) return { url, close: () => stop(child, exited) };
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop(child, exited);
  throw new Error(`pemba serve did not start:\n${output()}`);
}

/** The Worker in workerd through its dev script, on free ports, with `vars` as `--var NAME:value`. */
export async function startWorkerDev(vars: Record<string, string>): Promise<Served> {
  const port = await freePort();
  const inspector = await freePort();
  const state = mkdtempSync(join(tmpdir(), "pemba-console-worker-"));
  const args = ["--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector)];
  args.push(
    "--persist-to",
    join(state, "state"),
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
  );
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  const child = spawn("pnpm", ["--filter", "@pemba/worker", "run", "dev", ...args], {
    cwd: REPO_DIR,
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: "false",
      DO_NOT_TRACK: "1",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      CI: "true",
      NO_COLOR: "1",
      WRANGLER_LOG_PATH: join(state, "logs"),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const { output, exited } = watch(child);
  const url = `http://127.0.0.1:${port}`;
  const close = async () => {
    await stop(child, exited);
    rmSync(state, { recursive: true, force: true });
  };
  for (let i = 0; i < 1800 && child.exitCode === null; i++) {
    const up = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return { url, close };
    await new Promise((r) => setTimeout(r, 100));
  }
  await close();
  throw new Error(`wrangler dev did not answer /healthz:\n${output()}`);
}
