/**
 * The built console: generated/assets.ts is what scripts/build.ts makes from app/ (so the committed module is never
 * stale), and the Node server serves it at /console without a key even when the API needs one.
 */
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsoleFiles } from "../scripts/bundle.ts";
import { consoleAssets } from "../src/index.ts";
import { type Served, startNodeServer } from "../src/testing/servers.ts";

describe("console assets", () => {
  it("generated/assets.ts is the build of app/ and core (after editing either: pnpm --filter @pemba/console build)", async () => {
    const built = await buildConsoleFiles();
    expect(Object.keys(consoleAssets.files).sort()).toEqual(["console.css", "console.js", "index.html"]);
    for (const [name, file] of Object.entries(built)) expect(consoleAssets.files[name]).toEqual(file);
  });

  it("build.ts --check accepts the committed module (the check CI-style scripts can run)", () => {
    const script = resolve(import.meta.dirname, "../scripts/build.ts");
    const run = () =>
      execFileSync(process.execPath, ["--experimental-strip-types", "--no-warnings", script, "--check"], {
        encoding: "utf8",
        stdio: "pipe",
      });
    expect(run()).toBe("");
  });
});

describe("/console on the Node server, with preshared keys on", () => {
  let server: Served;
  beforeAll(async () => {
    server = await startNodeServer(["--auth-keys", "k1"]);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("serves the page and its files without a key; the API still needs one", async () => {
    const page = await fetch(`${server.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(await page.text()).toBe(consoleAssets.files["index.html"]!.body);
    const js = await fetch(`${server.url}/console/console.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await js.text()).length).toBe(consoleAssets.files["console.js"]!.body.length);
    const css = await fetch(`${server.url}/console/console.css`);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    const api = await fetch(`${server.url}/v1/tenants/t1/schemas/list`, { method: "POST", body: "{}" });
    expect(api.status).toBe(500);
    expect(await api.json()).toEqual({ code: 2, message: "ERROR_CODE_MISSING_BEARER_TOKEN", details: [] });
  });

  it("an unknown file is 404; /console/ redirects to /console (the page's links are relative)", async () => {
    const missing = await fetch(`${server.url}/console/nope.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ code: 5, message: "Not Found", details: [] });
    expect((await fetch(`${server.url}/console/index.html`)).status).toBe(404);
    // names of Object.prototype's members are not files
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      const r = await fetch(`${server.url}/console/${name}`);
      expect(r.status, name).toBe(404);
      expect(await r.json()).toEqual({ code: 5, message: "Not Found", details: [] });
    }
    const slash = await fetch(`${server.url}/console/`, { redirect: "manual" });
    expect(slash.status).toBe(301);
    expect(slash.headers.get("location")).toBe("../console");
  });
});
