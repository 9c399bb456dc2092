/**
 * Runs the Worker in workerd through `wrangler dev` (local mode, offline) with the repository's wrangler.toml,
 * and talks to it over real HTTP. Wrangler's own CLI (wrangler-dist/cli.js) is spawned with node directly, not
 * through the `wrangler` bin wrapper, so the PID we signal is wrangler itself (which then stops workerd).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { freePort } from "@pemba/core/testing/node";

export const REPO_DIR = resolve(import.meta.dirname, "../../../..");
const require = createRequire(resolve(REPO_DIR, "packages/worker/package.json"));
const WRANGLER_CLI = join(dirname(require.resolve("wrangler/package.json")), "wrangler-dist", "cli.js");

export interface WranglerDev {
  url: string;
  /** The V8 inspector wrangler dev exposes for the Worker (DevTools protocol; /json lists its targets). */
  inspectorPort: number;
  child: ChildProcess;
  output(): string;
  /** JSON request; returns the status, the parsed body (text when not JSON) and the headers. */
  call(
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: unknown; headers: Headers }>;
  close(): Promise<void>;
}

/**
 * Live wrangler processes: stopped if the test process ends before a test closes them (vitest stops a worker
 * process with SIGTERM, e.g. after a timeout while wrangler was still starting).
 */
const live = new Set<ChildProcess>();
let exitHooked = false;
function track(child: ChildProcess): void {
  live.add(child);
  if (exitHooked) return;
  exitHooked = true;
  const stopAll = () => {
    for (const c of live) c.kill("SIGTERM");
  };
  process.once("exit", stopAll);
  process.once("SIGTERM", () => {
    stopAll();
    process.exit(143);
  });
}

/**
 * The most of `wrangler dev`'s output kept for `output()`: past it the older half is dropped, so a long run (a
 * 30-minute soak logs a line per request) never grows one string past V8's limit.
 */
const MAX_DEV_OUTPUT = 64 * 1024 * 1024;

/** Runs a wrangler command with the repository's wrangler.toml, offline; resolves with its output. */
export function runWrangler(args: string[]): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      [WRANGLER_CLI, ...args, "--config", join(REPO_DIR, "wrangler.toml")],
      {
        cwd: REPO_DIR,
        env: { ...process.env, ...OFFLINE_ENV, WRANGLER_LOG_PATH: join(tmpdir(), "pemba-wrangler-logs") },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("error", fail);
    child.once("exit", (code) =>
      code === 0 ? done(output) : fail(new Error(`wrangler ${args.join(" ")} exited ${code}:\n${output}`)),
    );
  });
}

/** Offline and quiet: no telemetry, no fetch of the request.cf object, no update check. */
export const OFFLINE_ENV = {
  WRANGLER_SEND_METRICS: "false",
  DO_NOT_TRACK: "1",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  CI: "true",
  NO_COLOR: "1",
};

/**
 * Starts `wrangler dev` with `vars` added to wrangler.toml's [vars]; resolves once /healthz answers. Local state
 * (the D1 database) lives in `persistTo` when given (the caller removes it), else in a scratch folder.
 */
export async function startWranglerDev(
  vars: Record<string, string> = {},
  timeoutMs = 90_000,
  persistTo?: string,
  /** wrangler's log level; the Worker's console.log lines show from "log" (or "info") on. */
  logLevel: "warn" | "info" | "log" = "warn",
  /** Another wrangler config than the repository's (e.g. the load tests' bare Worker). */
  config = join(REPO_DIR, "wrangler.toml"),
  /** The HTTP port (its inspector listens on the next one); default: two free ports the OS picks. */
  port?: number,
): Promise<WranglerDev> {
  const httpPort = port ?? (await freePort());
  const scratch = mkdtempSync(join(tmpdir(), "pemba-wrangler-"));
  const inspectorPort = port === undefined ? await freePort() : port + 1;
  const args = [
    WRANGLER_CLI,
    "dev",
    "--config",
    config,
    "--ip",
    "127.0.0.1",
    "--port",
    String(httpPort),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    persistTo ?? join(scratch, "state"),
    "--show-interactive-dev-session=false",
    "--log-level",
    logLevel,
  ];
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  const child = spawn(process.execPath, args, {
    cwd: REPO_DIR,
    env: { ...process.env, ...OFFLINE_ENV, WRANGLER_LOG_PATH: join(scratch, "logs") },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > MAX_DEV_OUTPUT) output = output.slice(output.length - MAX_DEV_OUTPUT / 2);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  track(child);
  const exited = new Promise<void>((done) =>
    child.once("exit", () => {
      live.delete(child);
      done();
    }),
  );
  const url = `http://127.0.0.1:${httpPort}`;

  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(scratch, { recursive: true, force: true });
  };

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await close();
      throw new Error(`wrangler dev exited early (${child.exitCode ?? child.signalCode}):\n${output}`);
    }
    // A failed build does not end `wrangler dev` (it waits for a fix); fail at once instead of timing out. A Node
    // built-in in the bundle (wrangler warns that it may throw without nodejs_compat) fails the start too.
    if (/Build failed|\[ERROR\]|built into node/.test(output)) {
      await close();
      throw new Error(`wrangler dev could not start the Worker:\n${output}`);
    }
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await close();
      throw new Error(`wrangler dev did not answer within ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  const call: WranglerDev["call"] = async (path, body, headers = {}) => {
    const res = await fetch(`${url}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };

  return { url, inspectorPort, child, output: () => output, call, close };
}
