import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RequestInfo } from "./pipeline.ts";
import { startTestServer, TEST_SCHEMA, type TestServer, tuple } from "./testing/harness.ts";

const CHECK = "/v1/tenants/t1/permissions/check";
const checkBody = (extra: Record<string, unknown> = {}) => ({
  metadata: { depth: 20 },
  entity: { type: "document", id: "1" },
  permission: "view",
  subject: { type: "user", id: "1" },
  ...extra,
});

describe("HTTP app: transport rules", () => {
  let s: TestServer;
  const observed: RequestInfo[] = [];
  beforeAll(async () => {
    s = await startTestServer({
      observe: (info) => observed.push(info),
      limits: { maxBodyBytes: 20_000, maxDataPerWrite: 2, maxReadPageSize: 10 },
    });
    await s.call("/v1/tenants/t1/schemas/write", { schema: TEST_SCHEMA });
    await s.call("/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [tuple("document:1", "owner", "user:1")],
    });
  });
  afterAll(() => s.close());

  it("GET /healthz answers SERVING", async () => {
    const r = await s.call("/healthz", undefined, { method: "GET" });
    expect(r).toMatchObject({ status: 200, body: { status: "SERVING" } });
  });

  it("a wrong method on an existing path is 501 Method Not Allowed", async () => {
    const r = await s.call(CHECK, undefined, { method: "GET" });
    expect(r.status).toBe(501);
    expect(r.body).toEqual({ code: 12, message: "Method Not Allowed", details: [] });
    const put = await s.call("/v1/tenants/t1/schemas/partial-write", {}, { method: "POST" });
    expect(put.status).toBe(501);
  });

  it("an unknown path is 404 Not Found; observe sees the path asked for (matched routes report none)", async () => {
    const before = observed.length;
    const r = await s.call("/v1/tenants/t1/nothing-here?x=1", {});
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ code: 5, message: "Not Found", details: [] });
    expect(observed.slice(before)).toEqual([
      expect.objectContaining({ route: "notFound", path: "/v1/tenants/t1/nothing-here", status: 404 }),
    ]);
    await s.call("/healthz", undefined, { method: "GET" });
    expect(observed.at(-1)).toMatchObject({ route: "/healthz", path: undefined });
  });

  it("Permify's watch path is served (NDJSON), unlike Permify's gateway", async () => {
    const r = await s.call("/v1/tenants/t1/watch", { snap_token: "garbage!" });
    expect(r.status).toBe(400);
  });

  it("malformed JSON is 400 code 3 in Go's words", async () => {
    const r = await s.call(CHECK, undefined, { raw: "{not json" });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      code: 3,
      message: "invalid character 'n' looking for beginning of value",
      details: [],
    });
    const eof = await s.call(CHECK, undefined, { raw: '{"metadata":' });
    expect(eof.body).toEqual({ code: 3, message: "unexpected EOF", details: [] });
  });

  it("unknown request fields are ignored", async () => {
    const r = await s.call(CHECK, checkBody({ page_size: 10, whatever: { a: 1 } }));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ can: "CHECK_RESULT_ALLOWED", metadata: { check_count: expect.any(Number) } });
  });

  it("a missing depth is Permify's exact PGV message", async () => {
    const r = await s.call(CHECK, checkBody({ metadata: {} }));
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      code: 3,
      message:
        "invalid PermissionCheckRequest.Metadata: embedded message failed validation | caused by: invalid PermissionCheckRequestMetadata.Depth: value must be greater than or equal to 3",
      details: [],
    });
  });

  it("PGV messages for required messages, names and ids", async () => {
    const noMeta = await s.call(CHECK, { entity: { type: "document", id: "1" } });
    expect(noMeta.body).toEqual({
      code: 3,
      message: "invalid PermissionCheckRequest.Metadata: value is required",
      details: [],
    });
    const badType = await s.call(CHECK, checkBody({ entity: { type: "doc1", id: "1" } }));
    expect(badType.body).toEqual({
      code: 3,
      message:
        'invalid PermissionCheckRequest.Entity: embedded message failed validation | caused by: invalid Entity.Type: value does not match regex pattern "^[a-zA-Z_]{1,64}$"',
      details: [],
    });
    const badId = await s.call(CHECK, checkBody({ subject: { type: "user", id: "a#b" } }));
    expect(badId.body).toEqual({
      code: 3,
      message:
        'invalid PermissionCheckRequest.Subject: embedded message failed validation | caused by: invalid Subject.Id: value does not match regex pattern "^([a-zA-Z0-9_\\-@\\.:+]{1,128}|\\*)$"',
      details: [],
    });
    const noPermission = await s.call(CHECK, checkBody({ permission: "" }));
    expect(noPermission.body).toEqual({
      code: 3,
      message:
        'invalid PermissionCheckRequest.Permission: value does not match regex pattern "^[a-zA-Z_]{1,64}$"',
      details: [],
    });
  });

  it("a bad tenant id is refused with the TenantId rule", async () => {
    const r = await s.call("/v1/tenants/bad!tenant/permissions/check", checkBody());
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      code: 3,
      message:
        'invalid PermissionCheckRequest.TenantId: value does not match regex pattern "^([a-zA-Z0-9_\\-@\\.:+]{1,128}|\\*)$"',
      details: [],
    });
  });

  it("limits: body size -> 413 code 8 ERROR_CODE_REQUEST_TOO_LARGE", async () => {
    const r = await s.call(CHECK, checkBody({ padding: "x".repeat(30_000) }));
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ code: 8, message: "ERROR_CODE_REQUEST_TOO_LARGE", details: [] });
  });

  it("limits: tuples + attributes per write -> 400 ERROR_CODE_MAX_DATA_PER_WRITE_EXCEEDED, nothing written", async () => {
    const r = await s.call("/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [tuple("document:9", "owner", "user:1"), tuple("document:9", "owner", "user:2")],
      attributes: [
        { entity: { type: "document", id: "9" }, attribute: "is_public", value: { boolean: true } },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 3, message: "ERROR_CODE_MAX_DATA_PER_WRITE_EXCEEDED", details: [] });
    const read = await s.call("/v1/tenants/t1/data/relationships/read", {
      metadata: {},
      filter: { entity: { type: "document", ids: ["9"] } },
    });
    expect(read.body).toEqual({ tuples: [], continuous_token: "" });
  });

  it("limits: bulk check needs 1..100 items", async () => {
    const item = {
      entity: { type: "document", id: "1" },
      permission: "view",
      subject: { type: "user", id: "1" },
    };
    const none = await s.call("/v1/tenants/t1/permissions/bulk-check", { metadata: { depth: 5 }, items: [] });
    expect(none.body).toEqual({
      code: 3,
      message: "invalid PermissionBulkCheckRequest.Items: value must contain at least 1 item(s)",
      details: [],
    });
    const many = await s.call("/v1/tenants/t1/permissions/bulk-check", {
      metadata: { depth: 5 },
      items: Array.from({ length: 101 }, () => item),
    });
    expect(many.status).toBe(400);
    expect(many.body).toEqual({
      code: 3,
      message: "invalid PermissionBulkCheckRequest.Items: value must contain no more than 100 item(s)",
      details: [],
    });
  });

  it("limits: page size over the maximum -> 400 ERROR_CODE_PAGE_SIZE_EXCEEDED", async () => {
    const r = await s.call("/v1/tenants/t1/data/relationships/read", {
      metadata: {},
      filter: {},
      page_size: 11,
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 3, message: "ERROR_CODE_PAGE_SIZE_EXCEEDED", details: [] });
  });

  it("CORS default: a cross-origin request is refused before it runs; same-origin and origin-less pass", async () => {
    // a browser's "simple" request: text/plain, no preflight
    const write = await fetch(`${s.url}/v1/tenants/t1/data/write`, {
      method: "POST",
      headers: { origin: "https://evil.example", "content-type": "text/plain" },
      body: JSON.stringify({ metadata: {}, tuples: [tuple("document:9", "owner", "user:9")] }),
    });
    expect(write.status).toBe(403);
    expect(await write.json()).toEqual({
      code: 7,
      message:
        'cross-origin request from "https://evil.example" refused: origin not allowed (--cors-origins)',
      details: [],
    });
    expect(write.headers.get("access-control-allow-origin")).toBeNull();
    const check = await s.call(CHECK, checkBody(), { headers: { origin: "https://evil.example" } });
    expect(check.status).toBe(403);
    expect(check.headers.get("access-control-allow-origin")).toBeNull();
    // nothing was written
    const read = await s.call("/v1/tenants/t1/data/relationships/read", {
      metadata: {},
      filter: { entity: { type: "document", ids: ["9"] } },
    });
    expect(read.body).toEqual({ tuples: [], continuous_token: "" });
    const sameOrigin = await s.call(CHECK, checkBody(), { headers: { origin: s.url } });
    expect(sameOrigin.status).toBe(200);
    expect(sameOrigin.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await fetch(s.url + CHECK, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("observe is called once per request with the route template, status, decision and error", async () => {
    observed.length = 0;
    await s.call(CHECK, checkBody());
    await s.call("/v1/tenants/t1/nothing", {});
    expect(observed).toEqual([
      {
        method: "POST",
        route: "/v1/tenants/:tenant_id/permissions/check",
        status: 200,
        seconds: expect.any(Number),
        decision: "CHECK_RESULT_ALLOWED",
      },
      {
        method: "POST",
        route: "notFound",
        path: "/v1/tenants/t1/nothing",
        status: 404,
        seconds: expect.any(Number),
        decision: undefined,
        error: { code: 5, message: "Not Found", errorCode: "ERROR_CODE_NOT_FOUND" },
      },
    ]);
  });

  it("serves the OpenAPI document with every endpoint", async () => {
    const r = await s.call("/openapi.json", undefined, { method: "GET" });
    expect(r.status).toBe(200);
    const doc = r.body as { openapi: string; paths: Record<string, Record<string, { operationId: string }>> };
    const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([m, op]) => `${m.toUpperCase()} ${path} ${op.operationId}`),
    );
    expect(ops.sort()).toEqual(
      [
        "POST /v1/tenants/create tenants.create",
        "POST /v1/tenants/list tenants.list",
        "DELETE /v1/tenants/{id} tenants.delete",
        "POST /v1/tenants/{tenant_id}/schemas/write schemas.write",
        "PATCH /v1/tenants/{tenant_id}/schemas/partial-write schemas.partial-write",
        "POST /v1/tenants/{tenant_id}/schemas/read schemas.read",
        "POST /v1/tenants/{tenant_id}/schemas/list schemas.list",
        "POST /v1/tenants/{tenant_id}/schemas/diff schemas.diff",
        "POST /v1/tenants/{tenant_id}/data/write data.write",
        "POST /v1/tenants/{tenant_id}/relationships/write relationships.write",
        "POST /v1/tenants/{tenant_id}/data/relationships/read data.relationships.read",
        "POST /v1/tenants/{tenant_id}/data/attributes/read data.attributes.read",
        "POST /v1/tenants/{tenant_id}/data/delete data.delete",
        "POST /v1/tenants/{tenant_id}/relationships/delete relationships.delete",
        "POST /v1/tenants/{tenant_id}/data/run-bundle bundle.run",
        "POST /v1/tenants/{tenant_id}/bundle/write bundle.write",
        "POST /v1/tenants/{tenant_id}/bundle/read bundle.read",
        "POST /v1/tenants/{tenant_id}/bundle/delete bundle.delete",
        "POST /v1/tenants/{tenant_id}/permissions/check permissions.check",
        "POST /v1/tenants/{tenant_id}/permissions/bulk-check permissions.bulk-check",
        "POST /v1/tenants/{tenant_id}/permissions/expand permissions.expand",
        "POST /v1/tenants/{tenant_id}/permissions/lookup-entity permissions.lookupEntity",
        "POST /v1/tenants/{tenant_id}/permissions/lookup-entity-stream permissions.lookupEntityStream",
        "POST /v1/tenants/{tenant_id}/permissions/lookup-subject permissions.lookupSubject",
        "POST /v1/tenants/{tenant_id}/permissions/subject-permission permissions.subjectPermission",
        "POST /v1/tenants/{tenant_id}/permissions/explain permissions.explain",
        "POST /v1/tenants/{tenant_id}/watch watch.watch",
        "POST /v1/tenants/{tenant_id}/data/import data.import",
        "POST /v1/tenants/{tenant_id}/data/export data.export",
        "POST /v1/tenants/{tenant_id}/access/v1/evaluation authzen.evaluation",
        "POST /v1/tenants/{tenant_id}/access/v1/evaluations authzen.evaluations",
        "POST /v1/tenants/{tenant_id}/access/v1/search/subject authzen.search.subject",
        "POST /v1/tenants/{tenant_id}/access/v1/search/resource authzen.search.resource",
        "POST /v1/tenants/{tenant_id}/access/v1/search/action authzen.search.action",
        "GET /v1/tenants/{tenant_id}/.well-known/authzen-configuration authzen.configuration",
        "GET /.well-known/authzen-configuration/v1/tenants/{tenant_id} authzen.configuration.well-known",
      ].sort(),
    );
    expect(doc.openapi).toBe("3.0.3");
  });

  it("serves a self-contained docs page", async () => {
    const r = await fetch(`${s.url}/docs`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html = await r.text();
    expect(html).toContain('fetch("openapi.json")');
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
  });

  it("the docs page lists every endpoint without JavaScript: method, path, summary, by tag", async () => {
    const doc = (await (await fetch(`${s.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { summary: string; tags: string[] }>>;
    };
    const page = (await (await fetch(`${s.url}/docs`)).text()).replace(/<script>[\s\S]*?<\/script>/, "");
    expect(page).not.toContain("Loading");
    expect(page).toContain(
      'Pemba API (Permify-compatible) v1 (OpenAPI 3.0.3) · <a href="openapi.json">openapi.json</a>',
    );
    const items = page.match(/<li>.*<\/li>/g) ?? [];
    const expected = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(
        ([m, op]) =>
          `<li><span class="m ${m}">${m.toUpperCase()}</span><code>${path}</code> — ${op.summary}</li>`,
      ),
    );
    expect(expected).toHaveLength(36);
    expect(items.sort()).toEqual(expected.sort());
    expect(page).toContain(
      '<li><span class="m post">POST</span><code>/v1/tenants/{tenant_id}/permissions/check</code> — ' +
        `${doc.paths["/v1/tenants/{tenant_id}/permissions/check"]!.post!.summary}</li>`,
    );
    const tags = [
      ...new Set(Object.values(doc.paths).flatMap((m) => Object.values(m).map((op) => op.tags[0]))),
    ];
    expect(page.match(/<h2>[^<]+<\/h2>/g)).toEqual(tags.map((t) => `<h2>${t}</h2>`));
  });

  it("/docs/ redirects to /docs (the page's relative links resolve from there)", async () => {
    const r = await fetch(`${s.url}/docs/`, { redirect: "manual" });
    expect(r.status).toBe(301);
    expect(r.headers.get("location")).toBe("../docs");
    expect(await r.text()).toBe("");
    const followed = await fetch(`${s.url}/docs/`);
    expect(followed.status).toBe(200);
    expect(followed.url).toBe(`${s.url}/docs`);
    expect(await followed.text()).toBe(await (await fetch(`${s.url}/docs`)).text());
  });
});

describe("HTTP app: CORS with an origin list", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ cors: { origins: ["https://good.example"] } });
    await s.call("/v1/tenants/t1/schemas/write", { schema: TEST_SCHEMA });
  });
  afterAll(() => s.close());

  it("a listed origin is echoed with credentials (checks too); others are refused", async () => {
    const good = await s.call("/healthz", undefined, {
      method: "GET",
      headers: { origin: "https://good.example" },
    });
    expect(good.headers.get("access-control-allow-origin")).toBe("https://good.example");
    expect(good.headers.get("access-control-allow-credentials")).toBe("true");
    const check = await s.call(CHECK, checkBody(), { headers: { origin: "https://good.example" } });
    expect(check.status).toBe(200);
    expect(check.headers.get("access-control-allow-origin")).toBe("https://good.example");
    expect(check.headers.get("access-control-allow-credentials")).toBe("true");
    const bad = await s.call("/healthz", undefined, {
      method: "GET",
      headers: { origin: "https://evil.example" },
    });
    expect(bad.status).toBe(403);
    expect(bad.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("preflight lists Permify's methods and echoes the requested headers for a listed origin", async () => {
    const pre = await fetch(s.url + CHECK, {
      method: "OPTIONS",
      headers: {
        origin: "https://good.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type",
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("https://good.example");
    expect(pre.headers.get("access-control-allow-credentials")).toBe("true");
    expect(pre.headers.get("access-control-allow-methods")).toBe("GET, POST, HEAD, PATCH, DELETE, PUT");
    expect(pre.headers.get("access-control-allow-headers")).toBe("authorization,content-type");
  });
});

describe("HTTP app: CORS for every origin (*)", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ cors: { origins: "*" } });
    await s.call("/v1/tenants/t1/schemas/write", { schema: TEST_SCHEMA });
  });
  afterAll(() => s.close());

  it("answers any origin with Access-Control-Allow-Origin: * and never with credentials", async () => {
    for (const path of [CHECK, "/v1/tenants/t1/schemas/read"]) {
      const r = await s.call(path, path === CHECK ? checkBody() : { metadata: {} }, {
        headers: { origin: "https://any.example" },
      });
      expect([path, r.status]).toEqual([path, 200]);
      expect(r.headers.get("access-control-allow-origin")).toBe("*");
      expect(r.headers.get("access-control-allow-credentials")).toBeNull();
    }
    const pre = await fetch(s.url + CHECK, {
      method: "OPTIONS",
      headers: { origin: "https://any.example", "access-control-request-method": "POST" },
    });
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-credentials")).toBeNull();
  });
});

describe("HTTP app: /metrics, /openapi.json and /docs with authentication on", () => {
  const metrics = async () => ({ contentType: "text/plain; version=0.0.4", body: "up 1\n" });
  const auth = { mode: "preshared" as const, keys: [{ key: "admin" }, { key: "k1", tenants: ["t1"] }] };
  let guarded: TestServer;
  let open: TestServer;
  beforeAll(async () => {
    guarded = await startTestServer({ auth, metrics });
    open = await startTestServer({ auth, metrics, publicPaths: ["/metrics", "/openapi.json", "/docs"] });
  });
  afterAll(async () => {
    await guarded.close();
    await open.close();
  });

  it("need a valid key or token by default; /healthz stays open", async () => {
    for (const path of ["/metrics", "/openapi.json", "/docs"]) {
      const none = await fetch(guarded.url + path);
      expect([path, none.status, await none.json()]).toEqual([
        path,
        500,
        { code: 2, message: "ERROR_CODE_MISSING_BEARER_TOKEN", details: [] },
      ]);
      const wrong = await fetch(guarded.url + path, { headers: { authorization: "Bearer nope" } });
      expect([path, wrong.status]).toEqual([path, 401]);
      const tenantKey = await fetch(guarded.url + path, { headers: { authorization: "Bearer k1" } });
      expect([path, tenantKey.status]).toEqual([path, 200]);
    }
    // /docs/ is guarded like /docs
    expect((await fetch(`${guarded.url}/docs/`, { redirect: "manual" })).status).toBe(500);
    const docsSlash = await fetch(`${guarded.url}/docs/`, {
      redirect: "manual",
      headers: { authorization: "Bearer k1" },
    });
    expect([docsSlash.status, docsSlash.headers.get("location")]).toEqual([301, "../docs"]);
    const metricsText = await fetch(`${guarded.url}/metrics`, { headers: { authorization: "Bearer admin" } });
    expect(await metricsText.text()).toBe("up 1\n");
    expect((await fetch(`${guarded.url}/healthz`)).status).toBe(200);
  });

  it("are served without a key when listed in publicPaths", async () => {
    for (const path of ["/metrics", "/openapi.json", "/docs", "/docs/"]) {
      expect([path, (await fetch(open.url + path)).status]).toEqual([path, 200]);
    }
    const check = await fetch(`${open.url}/v1/tenants/t1/permissions/check`, { method: "POST", body: "{}" });
    expect(check.status).toBe(500); // the API itself still needs a key
  });
});
