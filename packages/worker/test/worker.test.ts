/**
 * The Worker in the real Workers runtime: `wrangler dev` runs packages/worker/src/index.ts (bundled by wrangler as
 * for a deploy) in workerd, on the default `memory:` store, with preshared-key auth and a CORS allow-list set
 * through vars; the test talks real HTTP to it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";
import { allowed, checkBody, DATA, denied, SCHEMA } from "./fixtures.ts";

const KEY = "worker-test-key";
const T2_KEY = "t2-only-key";
const ORIGIN = "https://app.example.com";
const auth = { authorization: `Bearer ${KEY}` };

describe("Worker on workerd (wrangler dev, memory store, preshared keys)", () => {
  let w: WranglerDev;
  beforeAll(async () => {
    w = await startWranglerDev({
      PEMBA_DATABASE: "memory:",
      PEMBA_AUTH_KEYS: `${KEY},${T2_KEY}:t2`,
      PEMBA_CORS_ORIGINS: ORIGIN,
    });
  });
  afterAll(async () => {
    await w?.close();
  });

  it("GET /healthz answers SERVING without a key", async () => {
    const res = await fetch(`${w.url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.text()).toBe('{"status":"SERVING"}');
  });

  it("GET /openapi.json serves the OpenAPI document of the core app (with a key, as auth is on)", async () => {
    expect((await w.call("/openapi.json")).status).toBe(500);
    const res = await w.call("/openapi.json", undefined, auth);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const doc = res.body as { openapi: string; info: { title: string; version: string }; paths: object };
    expect(doc.openapi).toBe("3.0.3");
    expect(doc.info.title).toBe("Pemba API (Permify-compatible)");
    expect(doc.info.version).toBe("0.1.0");
    expect(Object.keys(doc.paths)).toContain("/v1/tenants/{tenant_id}/permissions/check");
    expect(Object.keys(doc.paths)).toContain("/v1/tenants/{tenant_id}/schemas/write");
  });

  it("refuses API requests without a key or with a wrong one", async () => {
    expect(await w.call("/v1/tenants/t1/schemas/write", { schema: SCHEMA })).toMatchObject({
      status: 500,
      body: { code: 2, message: "ERROR_CODE_MISSING_BEARER_TOKEN", details: [] },
    });
    expect(
      await w.call("/v1/tenants/t1/schemas/write", { schema: SCHEMA }, { authorization: "Bearer nope" }),
    ).toMatchObject({
      status: 401,
      body: { code: 16, message: "ERROR_CODE_INVALID_KEY", details: [] },
    });
    expect(
      await w.call("/v1/tenants/t1/permissions/check", checkBody("document:1", "view", "user:1")),
    ).toMatchObject({
      status: 500,
      body: { code: 2, message: "ERROR_CODE_MISSING_BEARER_TOKEN", details: [] },
    });
  });

  it("writes a schema and data, then checks: ALLOWED and DENIED", async () => {
    const schema = await w.call("/v1/tenants/t1/schemas/write", { schema: SCHEMA }, auth);
    expect(schema).toMatchObject({ status: 200, body: { schema_version: expect.any(String) } });
    expect(Object.keys(schema.body as object)).toEqual(["schema_version"]);

    const data = await w.call("/v1/tenants/t1/data/write", DATA, auth);
    expect(data).toMatchObject({ status: 200, body: { snap_token: expect.any(String) } });
    expect(Object.keys(data.body as object)).toEqual(["snap_token"]);

    const check = (entity: string, permission: string, subject: string) =>
      w.call("/v1/tenants/t1/permissions/check", checkBody(entity, permission, subject), auth);

    expect(await check("document:1", "edit", "user:1")).toMatchObject({ status: 200, body: allowed(2) });
    expect((await check("document:1", "edit", "user:2")).body).toEqual(allowed(3)); // via org.admin
    expect((await check("document:1", "view", "user:3")).body).toEqual(allowed(5)); // via org.member
    expect((await check("document:2", "view", "user:9")).body).toEqual(allowed(4)); // is_public
    expect(await check("document:1", "edit", "user:3")).toMatchObject({ status: 200, body: denied(3) });
    expect((await check("document:1", "view", "user:9")).body).toEqual(denied(6));
  });

  it("a key limited to tenant t2 cannot use t1", async () => {
    const res = await w.call("/v1/tenants/t1/permissions/check", checkBody("document:1", "view", "user:1"), {
      authorization: `Bearer ${T2_KEY}`,
    });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: 7, message: "ERROR_CODE_PERMISSION_DENIED", details: [] });
  });

  it("CORS: the allowed origin is echoed, other origins are refused", async () => {
    const preflight = await fetch(`${w.url}/v1/tenants/t1/permissions/check`, {
      method: "OPTIONS",
      headers: {
        origin: ORIGIN,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(preflight.headers.get("access-control-allow-credentials")).toBe("true");
    expect(preflight.headers.get("access-control-allow-methods")).toBe("GET, POST, HEAD, PATCH, DELETE, PUT");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("authorization,content-type");

    const other = await fetch(`${w.url}/healthz`, { headers: { origin: "https://evil.example.com" } });
    expect(other.status).toBe(403);
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const same = await fetch(`${w.url}/healthz`, { headers: { origin: ORIGIN } });
    expect(same.headers.get("access-control-allow-origin")).toBe(ORIGIN);
  });

  it("unknown routes answer Permify's 404 body", async () => {
    expect(await w.call("/v1/nope")).toEqual({
      status: 404,
      body: { code: 5, message: "Not Found", details: [] },
      headers: expect.anything(),
    });
  });
});
