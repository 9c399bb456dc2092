/**
 * The published package as a user installs it: publint and arethetypeswrong on the package, `npm pack` and an
 * install of the tarball into a scratch project, then the same calls (test/fixtures/scratch/smoke.js) against a
 * real `pemba serve` from Node 22, Node 20 (/usr/bin/node), a Worker in workerd (wrangler dev) and headless
 * Chromium (Debian's /usr/bin/chromium through playwright-core); the types compile for a TypeScript consumer.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { CHROMIUM_LAUNCH } from "@pemba/core/testing";
import { type ScratchServer, startScratchServe } from "@pemba/node-server/testing";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { measureBrowserBundle } from "../scripts/bundle-size.ts";
// @ts-expect-error: plain JavaScript fixture (it runs unchanged in every runtime), no declarations
import { EXPECTED } from "./fixtures/scratch/smoke.js";
import {
  installPackedSdk,
  type ScratchProject,
  SDK_DIR,
  startScratchWorker,
  startStaticServer,
} from "./runtimes.ts";

const BIN = resolve(SDK_DIR, "node_modules/.bin");
const NODE20 = "/usr/bin/node";
const node20Version = existsSync(NODE20)
  ? spawnSync(NODE20, ["--version"], { encoding: "utf8" }).stdout.trim()
  : "";
const CHROMIUM = CHROMIUM_LAUNCH.executablePath;

describe("the packed @pemba/sdk in every runtime", () => {
  let scratch: ScratchProject;
  let pages: Awaited<ReturnType<typeof startStaticServer>>;
  let server: ScratchServer;
  beforeAll(async () => {
    scratch = installPackedSdk();
    pages = await startStaticServer(scratch.dir);
    server = await startScratchServe(["--cors-origins", pages.url]);
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
    if (scratch) rmSync(scratch.dir, { recursive: true, force: true });
  });

  it("publint (strict) and arethetypeswrong find no problem", () => {
    const publint = spawnSync(join(BIN, "publint"), ["--strict"], { cwd: SDK_DIR, encoding: "utf8" });
    expect(publint.stdout).toContain("All good!");
    expect(publint.status).toBe(0);
    const attw = spawnSync(
      join(BIN, "attw"),
      ["--profile", "esm-only", "--format", "json", scratch.tarball],
      {
        encoding: "utf8",
      },
    );
    expect(attw.status).toBe(0);
    const report = JSON.parse(attw.stdout) as { analysis: { problems: unknown[] } };
    expect(
      report.analysis.problems.filter((p) => (p as { kind: string }).kind !== "CJSResolvesToESM"),
    ).toEqual([]);
  });

  it("the tarball holds the built ESM, declarations and README, and no source or dependencies", () => {
    const installed = join(scratch.dir, "node_modules/@pemba/sdk");
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as Record<string, unknown>;
    expect(pkg.exports).toEqual({
      ".": { types: "./dist/index.d.ts", default: "./dist/index.js" },
      "./package.json": "./package.json",
    });
    expect(pkg.type).toBe("module");
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.peerDependencies).toBeUndefined();
    expect(readdirSync(installed).sort()).toEqual(["README.md", "dist", "package.json"]);
    const dist = readdirSync(join(installed, "dist"));
    expect(dist.filter((f) => f.endsWith(".js"))).toEqual(["index.js"]);
    expect(dist).toContain("index.d.ts");
    expect(dist).toContain("wire.gen.d.ts");
    expect(readFileSync(join(installed, "dist/index.js"), "utf8")).not.toMatch(/\bimport\s.*from\s*"(?!\.)/);
  });

  it("the browser bundle is at most 8 KB gzipped", async () => {
    const size = await measureBrowserBundle();
    process.stdout.write(
      `@pemba/sdk browser bundle: ${size.minified} B minified, ${size.gzipped} B gzipped\n`,
    );
    expect(size.gzipped).toBeLessThanOrEqual(8 * 1024);
  });

  it("runs in Node 22", () => {
    expect(process.version).toMatch(/^v22\./);
    const out = execFileSync(process.execPath, ["node-main.mjs", server.url, "node22"], {
      cwd: scratch.dir,
      encoding: "utf8",
    });
    expect(JSON.parse(out)).toEqual(EXPECTED);
  });

  it.skipIf(!node20Version.startsWith("v20."))(`runs in Node 20 (${NODE20} ${node20Version})`, () => {
    const out = execFileSync(NODE20, ["node-main.mjs", server.url, "node20"], {
      cwd: scratch.dir,
      encoding: "utf8",
    });
    expect(JSON.parse(out)).toEqual(EXPECTED);
  });

  it("type-checks a TypeScript consumer under moduleResolution node16 and bundler", () => {
    for (const [module, resolution] of [
      ["node16", "node16"],
      ["esnext", "bundler"],
    ]) {
      writeFileSync(
        join(scratch.dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            target: "es2022",
            lib: ["es2022", "dom"],
            types: [],
            module,
            moduleResolution: resolution,
          },
          files: ["consumer.ts"],
        }),
      );
      const tsc = spawnSync(
        process.execPath,
        [resolve(SDK_DIR, "../../node_modules/typescript/bin/tsc"), "-p", "."],
        {
          cwd: scratch.dir,
          encoding: "utf8",
        },
      );
      expect(tsc.stdout + tsc.stderr).toBe("");
      expect(tsc.status).toBe(0);
    }
  }, 180_000);

  it("runs in a Worker on workerd (wrangler dev)", async () => {
    const worker = await startScratchWorker(scratch.dir, { PEMBA_URL: server.url });
    try {
      const res = await fetch(worker.url);
      expect(await res.json()).toEqual(EXPECTED);
    } finally {
      await worker.close();
    }
  }, 180_000);

  it.skipIf(!existsSync(CHROMIUM))(
    "runs in headless Chromium (a module script from another origin, CORS)",
    async () => {
      const browser = await chromium.launch({ ...CHROMIUM_LAUNCH, args: [...CHROMIUM_LAUNCH.args] });
      try {
        const page = await browser.newPage();
        await page.goto(`${pages.url}/index.html`);
        await page.waitForFunction(() => (globalThis as { sdkReady?: boolean }).sdkReady === true);
        const result = await page.evaluate(
          (url) => (globalThis as unknown as { runSmoke(u: string): Promise<unknown> }).runSmoke(url),
          server.url,
        );
        expect(result).toEqual(EXPECTED);
      } finally {
        await browser.close();
      }
    },
  );
});
