import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, startServe } from "../src/testing/cli-process.ts";
import { checkBody, post, TEST_SCHEMA } from "./api-client.ts";

describe("pemba serve with preshared keys (PEMBA_AUTH_KEYS)", () => {
  let dir: string;
  let server: CliProcess & { url: string };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "pemba-auth-"));
    server = await startServe(["--database", join(dir, "pemba.db")], { PEMBA_AUTH_KEYS: "admin,t2key:t2" });
  });
  afterAll(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it("the startup line names the auth mode", async () => {
    const startup = await server.waitForLog((e) => typeof e.url === "string");
    expect(startup.auth).toBe("preshared");
  });

  it("a request with a valid key is served; a wrong key is refused with ERROR_CODE_INVALID_KEY", async () => {
    const ok = await post(
      server.url,
      "/v1/tenants/t1/schemas/write",
      { schema: TEST_SCHEMA },
      {
        authorization: "Bearer admin",
      },
    );
    expect(ok).toMatchObject({ status: 200 });
    const wrong = await post(
      server.url,
      "/v1/tenants/t1/permissions/check",
      checkBody("document:1", "view", "user:a"),
      {
        authorization: "Bearer nope",
      },
    );
    expect(wrong).toEqual({
      status: 401,
      body: { code: 16, message: "ERROR_CODE_INVALID_KEY", details: [] },
    });
  });

  it("a tenant-limited key cannot use another tenant", async () => {
    const r = await post(
      server.url,
      "/v1/tenants/t1/permissions/check",
      checkBody("document:1", "view", "user:a"),
      {
        authorization: "Bearer t2key",
      },
    );
    expect(r).toEqual({
      status: 403,
      body: { code: 7, message: "ERROR_CODE_PERMISSION_DENIED", details: [] },
    });
  });
});

describe("pemba serve with keys: /metrics, /openapi.json, /docs", () => {
  const servers: (CliProcess & { url: string })[] = [];
  afterAll(async () => {
    for (const s of servers) {
      s.child.kill("SIGTERM");
      await s.exited;
    }
  });

  it("need a key by default; --public-paths opens the listed ones; /healthz is always open", async () => {
    const guarded = await startServe(["--database", "memory:", "--auth-keys", "admin"]);
    servers.push(guarded);
    for (const path of ["/metrics", "/openapi.json", "/docs"]) {
      const none = await fetch(guarded.url + path);
      expect([path, none.status, await none.json()]).toEqual([
        path,
        500,
        { code: 2, message: "ERROR_CODE_MISSING_BEARER_TOKEN", details: [] },
      ]);
      const keyed = await fetch(guarded.url + path, { headers: { authorization: "Bearer admin" } });
      expect([path, keyed.status]).toEqual([path, 200]);
    }
    expect((await fetch(`${guarded.url}/healthz`)).status).toBe(200);

    const open = await startServe(["--database", "memory:", "--auth-keys", "admin"], {
      PEMBA_PUBLIC_PATHS: "/metrics",
    });
    servers.push(open);
    const metrics = await fetch(`${open.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain("# TYPE pemba_http_requests_total counter");
    expect((await fetch(`${open.url}/openapi.json`)).status).toBe(500);
  });
});
