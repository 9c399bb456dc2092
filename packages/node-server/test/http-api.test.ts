/**
 * The core HTTP app behind the production Node adapter (@hono/node-server): a smoke subset of the API over real
 * HTTP, on a MemoryStore, a real SQLite file and PostgreSQL, including the streaming endpoints.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAdaptorServer, getRequestListener } from "@hono/node-server";
import type { Store } from "@pemba/core";
import { createApp, MemoryStore, PembaService } from "@pemba/core";
import { openStore, SqliteStore } from "@pemba/core/node";
import { startPostgres } from "@pemba/core/testing/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkPathTenant, handleNodeCheck } from "../src/node-check.ts";
import { checkBody, post, TEST_SCHEMA, tuple } from "./api-client.ts";

async function serve(store: Store): Promise<{ url: string; close: () => Promise<void> }> {
  const app = createApp({ service: new PembaService(store), watchPollMs: 20 });
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const stores: [string, () => Promise<{ store: Store; cleanup: () => Promise<void> | void }>][] = [
  ["MemoryStore", async () => ({ store: new MemoryStore(), cleanup: () => {} })],
  [
    "SQLite file",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "pemba-http-"));
      const store = SqliteStore.open(join(dir, "pemba.db"));
      return { store, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
    },
  ],
  [
    "PostgreSQL",
    async () => {
      const pg = await startPostgres();
      return { store: await openStore(pg.url), cleanup: () => pg.stop() };
    },
  ],
];

describe.each(stores)("HTTP API over @hono/node-server on %s", (_name, open) => {
  let url: string;
  let close: () => Promise<void>;
  let store: Store;
  let cleanup: () => Promise<void> | void;
  let firstSnap: string;
  beforeAll(async () => {
    ({ store, cleanup } = await open());
    ({ url, close } = await serve(store));
    const schema = await post(url, "/v1/tenants/t1/schemas/write", { schema: TEST_SCHEMA });
    expect(schema.status).toBe(200);
    const w = await post(url, "/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [tuple("document:1", "owner", "user:1")],
    });
    firstSnap = w.body.snap_token as string;
    await post(url, "/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [tuple("document:1", "viewer", "user:2")],
    });
  });
  afterAll(async () => {
    await close();
    await store.close();
    await cleanup();
  });

  it("check: allowed, denied, and at an old snap token", async () => {
    expect(
      (await post(url, "/v1/tenants/t1/permissions/check", checkBody("document:1", "edit", "user:1"))).body,
    ).toEqual({
      can: "CHECK_RESULT_ALLOWED",
      metadata: { check_count: expect.any(Number) },
    });
    expect(
      (await post(url, "/v1/tenants/t1/permissions/check", checkBody("document:1", "edit", "user:2"))).body,
    ).toEqual({
      can: "CHECK_RESULT_DENIED",
      metadata: { check_count: expect.any(Number) },
    });
    const old = await post(url, "/v1/tenants/t1/permissions/check", {
      ...checkBody("document:1", "view", "user:2"),
      metadata: { depth: 20, snap_token: firstSnap },
    });
    expect(old.body.can).toBe("CHECK_RESULT_DENIED");
  });

  it("the check path reads Node's headers (a cross-origin check is refused by default)", async () => {
    const res = await fetch(`${url}/v1/tenants/t1/permissions/check`, {
      method: "POST",
      headers: { origin: "https://app.example", "content-type": "application/json" },
      body: JSON.stringify(checkBody("document:1", "edit", "user:1")),
    });
    expect(res.status).toBe(403);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("relationships read answers every field", async () => {
    const r = await post(url, "/v1/tenants/t1/data/relationships/read", {
      metadata: {},
      filter: { entity: { type: "document", ids: ["1"] }, relation: "viewer" },
    });
    expect(r.body).toEqual({ tuples: [tuple("document:1", "viewer", "user:2")], continuous_token: "" });
  });

  it("errors keep Permify's shape", async () => {
    const r = await post(url, "/v1/tenants/t1/permissions/check", checkBody("document:1", "nope", "user:1"));
    expect(r).toEqual({
      status: 404,
      body: { code: 5, message: "ERROR_CODE_SCHEMA_NOT_FOUND", details: [] },
    });
  });

  it("lookup-entity-stream answers NDJSON", async () => {
    const res = await fetch(`${url}/v1/tenants/t1/permissions/lookup-entity-stream`, {
      method: "POST",
      body: JSON.stringify({
        metadata: { depth: 20 },
        entity_type: "document",
        permission: "view",
        subject: { type: "user", id: "2" },
      }),
    });
    expect(await res.text()).toBe('{"result":{"entity_id":"1","continuous_token":""}}\n');
  });

  it("watch streams a later write", async () => {
    const abort = new AbortController();
    const res = await fetch(`${url}/v1/tenants/t1/watch`, {
      method: "POST",
      body: "{}",
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    const w = await post(url, "/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [tuple("document:2", "owner", "user:3")],
    });
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    expect(JSON.parse(text.split("\n")[0])).toEqual({
      changes: {
        snap_token: w.body.snap_token,
        data_changes: [{ operation: "OPERATION_CREATE", tuple: tuple("document:2", "owner", "user:3") }],
      },
    });
  });
});

describe("handleNodeCheck: checks answered straight on node:http", () => {
  let url: string;
  let server: Server;
  let viaHono: (path: string, body: unknown, headers?: Record<string, string>) => Promise<unknown>;
  const observed: { route: string; status: number; decision?: string }[] = [];
  beforeAll(async () => {
    const service = new PembaService(new MemoryStore());
    const app = createApp({
      service,
      cors: { origins: ["https://app.example"] },
      auth: { mode: "preshared", keys: [{ key: "admin" }, { key: "k2", tenants: ["t2"] }] },
      observe: ({ route, status, decision }) => observed.push({ route, status, decision }),
    });
    const listener = getRequestListener(app.fetch);
    server = createServer((req, res) => {
      if (!handleNodeCheck(app, req, res)) void listener(req, res);
    });
    viaHono = async (path, body, headers = {}) => {
      const request = new Request(`http://localhost${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
      const r = await app.fetch(request);
      return { status: r.status, body: await r.json() };
    };
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const admin = { authorization: "Bearer admin" };
    expect((await post(url, "/v1/tenants/t1/schemas/write", { schema: TEST_SCHEMA }, admin)).status).toBe(
      200,
    );
    await post(
      url,
      "/v1/tenants/t1/data/write",
      { metadata: {}, tuples: [tuple("document:1", "owner", "user:1")] },
      admin,
    );
  });
  afterAll(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );

  it("answers checks with the same bodies, errors, auth and CORS as app.fetch", async () => {
    observed.length = 0;
    const admin = { authorization: "Bearer admin" };
    const ok = await post(
      url,
      "/v1/tenants/t1/permissions/check",
      checkBody("document:1", "edit", "user:1"),
      admin,
    );
    expect(ok).toEqual({
      status: 200,
      body: { can: "CHECK_RESULT_ALLOWED", metadata: { check_count: expect.any(Number) } },
    });
    const no = await post(
      url,
      "/v1/tenants/t1/permissions/check",
      checkBody("document:1", "edit", "user:2"),
      admin,
    );
    expect(no.body.can).toBe("CHECK_RESULT_DENIED");
    const unknown = await post(
      url,
      "/v1/tenants/t1/permissions/check",
      checkBody("document:1", "nope", "user:1"),
      admin,
    );
    expect(unknown).toEqual({
      status: 404,
      body: { code: 5, message: "ERROR_CODE_SCHEMA_NOT_FOUND", details: [] },
    });
    const noKey = await post(
      url,
      "/v1/tenants/t1/permissions/check",
      checkBody("document:1", "edit", "user:1"),
    );
    expect(noKey).toEqual({
      status: 500,
      body: { code: 2, message: "ERROR_CODE_MISSING_BEARER_TOKEN", details: [] },
    });
    const otherTenant = await post(
      url,
      "/v1/tenants/t1/permissions/check",
      checkBody("document:1", "edit", "user:1"),
      {
        authorization: "Bearer k2",
      },
    );
    expect(otherTenant).toEqual({
      status: 403,
      body: { code: 7, message: "ERROR_CODE_PERMISSION_DENIED", details: [] },
    });
    const noDepth = await post(
      url,
      "/v1/tenants/t1/permissions/check",
      { ...checkBody("document:1", "edit", "user:1"), metadata: {} },
      admin,
    );
    expect(noDepth.body.message).toBe(
      "invalid PermissionCheckRequest.Metadata: embedded message failed validation | caused by: invalid PermissionCheckRequestMetadata.Depth: value must be greater than or equal to 3",
    );
    const cors = await fetch(`${url}/v1/tenants/t1/permissions/check`, {
      method: "POST",
      headers: { ...admin, origin: "https://app.example" },
      body: JSON.stringify(checkBody("document:1", "edit", "user:1")),
    });
    expect(cors.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(cors.headers.get("content-type")).toBe("application/json");
    expect(observed.slice(0, 2)).toEqual([
      { route: "/v1/tenants/:tenant_id/permissions/check", status: 200, decision: "CHECK_RESULT_ALLOWED" },
      { route: "/v1/tenants/:tenant_id/permissions/check", status: 200, decision: "CHECK_RESULT_DENIED" },
    ]);
  });

  it("answers explain (the check body) as Hono does: the same answers, errors and auth", async () => {
    observed.length = 0;
    const admin = { authorization: "Bearer admin" };
    const path = "/v1/tenants/t1/permissions/explain";
    const cases: [unknown, Record<string, string>][] = [
      [checkBody("document:1", "edit", "user:1"), admin],
      [checkBody("document:1", "edit", "user:2"), admin],
      [checkBody("document:1", "nope", "user:1"), admin],
      [checkBody("document:1", "edit", "user:1"), {}],
      [checkBody("document:1", "edit", "user:1"), { authorization: "Bearer k2" }],
      [{ ...checkBody("document:1", "edit", "user:1"), metadata: {} }, admin],
    ];
    const direct = [];
    for (const [body, headers] of cases) {
      const answer = await post(url, path, body, headers);
      expect(answer).toEqual(await viaHono(path, body, headers));
      direct.push(answer.status);
    }
    expect(direct).toEqual([200, 200, 404, 500, 403, 400]);
    expect(observed.filter((o) => o.route === "/v1/tenants/:tenant_id/permissions/explain").length).toBe(12);
    expect(observed[0]).toEqual({
      route: "/v1/tenants/:tenant_id/permissions/explain",
      status: 200,
      decision: "CHECK_RESULT_ALLOWED",
    });
  });

  it("a string metadata.depth (proto3 JSON) is answered like a number", async () => {
    const admin = { authorization: "Bearer admin" };
    const body = { ...checkBody("document:1", "edit", "user:1"), metadata: { depth: "10" } };
    expect(await post(url, "/v1/tenants/t1/permissions/check", body, admin)).toEqual({
      status: 200,
      body: { can: "CHECK_RESULT_ALLOWED", metadata: { check_count: expect.any(Number) } },
    });
  });

  it("leaves every other request to Hono", async () => {
    const health = await fetch(`${url}/healthz`);
    expect(await health.json()).toEqual({ status: "SERVING" });
    const wrongMethod = await fetch(`${url}/v1/tenants/t1/permissions/check`, {
      headers: { authorization: "Bearer admin" },
    });
    expect(wrongMethod.status).toBe(501);
  });
});

describe("checkPathTenant: the tenant of a check URL", () => {
  it("matches only POST paths of the check endpoint, decoding the tenant id", () => {
    expect(checkPathTenant("/v1/tenants/t1/permissions/check")).toBe("t1");
    expect(checkPathTenant("/v1/tenants/t1/permissions/check?x=1")).toBe("t1");
    expect(checkPathTenant("/v1/tenants/a%40b/permissions/check")).toBe("a@b");
    expect(checkPathTenant("/v1/tenants/%E0%A4/permissions/check")).toBeUndefined();
    expect(checkPathTenant("/v1/tenants/t1/permissions/checks")).toBeUndefined();
    expect(checkPathTenant("/v1/tenants/t1/x/permissions/check")).toBeUndefined();
    expect(checkPathTenant("/v1/tenants//permissions/check")).toBeUndefined();
    expect(checkPathTenant("/v1/tenants/t1/permissions/bulk-check")).toBeUndefined();
  });
});
