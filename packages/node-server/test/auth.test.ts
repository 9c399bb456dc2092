import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkBody, post, TEST_SCHEMA } from "./api-client.ts";
import { type CliProcess, startServe } from "./cli-process.ts";

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
