/**
 * TEST SUPPORT: the SDK as a user gets it (`npm pack`, then `npm install` of the tarball into a scratch project
 * made from test/fixtures/scratch), and the runtimes that run it: `wrangler dev` (workerd) for a Worker, a static
 * file server for headless Chromium.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

export const SDK_DIR = resolve(import.meta.dirname, "..");
const REPO_DIR = resolve(SDK_DIR, "../..");

export interface ScratchProject {
  dir: string;
  tarball: string;
}

/** Packs the built package and installs the tarball, with nothing else, into a new scratch project. */
export function installPackedSdk(): ScratchProject {
  const dir = mkdtempSync(join(tmpdir(), "pemba-sdk-scratch-"));
  const packed = JSON.parse(
    execFileSync("npm", ["pack", "--json", "--pack-destination", dir], { cwd: SDK_DIR, encoding: "utf8" }),
  ) as { filename: string }[];
  const tarball = join(dir, packed[0].filename);
  cpSync(join(SDK_DIR, "test/fixtures/scratch"), dir, { recursive: true });
  renameSync(join(dir, "consumer.ts.fixture"), join(dir, "consumer.ts"));
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({
      name: "sdk-scratch",
      private: true,
      type: "module",
      dependencies: { "@pemba/sdk": `file:./${packed[0].filename}` },
    }),
  );
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts"], {
    cwd: dir,
    stdio: "pipe",
  });
  return { dir, tarball };
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createNetServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => done(port));
    });
  });
}

/** Serves the scratch project's page, smoke.js, and the installed package's dist/ under /sdk/. */
export async function startStaticServer(scratch: string): Promise<{ url: string; close(): Promise<void> }> {
  const files: Record<string, [string, string]> = {
    "/index.html": [join(scratch, "index.html"), "text/html"],
    "/smoke.js": [join(scratch, "smoke.js"), "text/javascript"],
    "/sdk/index.js": [join(scratch, "node_modules/@pemba/sdk/dist/index.js"), "text/javascript"],
  };
  const server: Server = createHttpServer((req, res) => {
    const file = files[req.url ?? ""];
    if (file === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": file[1] }).end(readFileSync(file[0]));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((done) => server.close(() => done())),
  };
}

const requireFromWorker = createRequire(join(REPO_DIR, "packages/worker/package.json"));
const WRANGLER_CLI = join(
  dirname(requireFromWorker.resolve("wrangler/package.json")),
  "wrangler-dist",
  "cli.js",
);

/** `wrangler dev` (local workerd, offline) of the scratch project's worker.js; resolves once it answers. */
export async function startScratchWorker(
  scratch: string,
  vars: Record<string, string>,
): Promise<{ url: string; close(): Promise<void> }> {
  const port = await freePort();
  const args = [WRANGLER_CLI, "dev", "--ip", "127.0.0.1", "--port", String(port)];
  args.push("--inspector-port", String(await freePort()), "--show-interactive-dev-session=false");
  args.push("--log-level", "warn");
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: scratch,
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: "false",
      DO_NOT_TRACK: "1",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      WRANGLER_LOG_PATH: join(scratch, ".wrangler-logs"),
      CI: "true",
      NO_COLOR: "1",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null || /Build failed|\[ERROR\]/.test(output)) {
      await close();
      throw new Error(`wrangler dev failed:\n${output}`);
    }
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await close();
      throw new Error(`wrangler dev did not answer within 90 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, close };
}
