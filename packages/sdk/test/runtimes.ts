/**
 * TEST SUPPORT: the SDK as a user gets it (`npm pack`, then `npm install` of the tarball into a scratch project
 * made from test/fixtures/scratch), and the runtimes that run it: `wrangler dev` (workerd) for a Worker, a static
 * file server for headless Chromium.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

import { startWranglerDev } from "@pemba/worker/testing";

export const SDK_DIR = resolve(import.meta.dirname, "..");

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

/** `wrangler dev` (local workerd, offline) of the scratch project's worker.js; resolves once it answers. */
export async function startScratchWorker(
  scratch: string,
  vars: Record<string, string>,
): Promise<{ url: string; close(): Promise<void> }> {
  return await startWranglerDev(vars, 90_000, undefined, "warn", join(scratch, "wrangler.toml"));
}
