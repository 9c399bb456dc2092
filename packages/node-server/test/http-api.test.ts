/**
 * The core HTTP app behind the production Node adapter (@hono/node-server): a smoke subset of the API over real
 * HTTP, on a MemoryStore, a real SQLite file and PostgreSQL, including the streaming endpoints.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAdaptorServer, getRequestListener } from "@hono/node-server";
import type { ApiRoute, RequestInfo, Store } from "@pemba/core";
import {
  AUTHZEN_ROOT_ROUTES,
  AUTHZEN_ROUTES,
  createApp,
  MemoryStore,
  matchRoute,
  PembaService,
  ROUTE_LIST,
  ROUTES,
} from "@pemba/core";
import { openStore, SqliteStore } from "@pemba/core/node";
import { startPostgres } from "@pemba/core/testing/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRequestListener, decodedParams, routeMatcher, writeAnswer } from "../src/node-routes.ts";
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

/** An app as the server builds it: CORS for one origin, preshared keys (one limited to t2), a small body limit. */
function comparedApp(observe?: (info: RequestInfo) => void) {
  return createApp({
    service: new PembaService(new MemoryStore()),
    cors: { origins: ["https://app.example"] },
    auth: { mode: "preshared", keys: [{ key: "admin" }, { key: "k2", tenants: ["t2"] }] },
    limits: { maxBodyBytes: BODY_LIMIT },
    observe,
    authzenTenant: "t1",
  });
}

const BODY_LIMIT = 16 * 1024;

async function listenOn(
  listener: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; server: Server }> {
  const server = createServer(listener);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  });
}

describe("apiRequestListener: checks answered straight on node:http", () => {
  let url: string;
  let server: Server;
  let viaHono: (path: string, body: unknown, headers?: Record<string, string>) => Promise<unknown>;
  const observed: { route: string; status: number; decision?: string }[] = [];
  beforeAll(async () => {
    const app = comparedApp(({ route, status, decision }) => observed.push({ route, status, decision }));
    ({ url, server } = await listenOn(apiRequestListener(app)));
    viaHono = async (path, body, headers = {}) => {
      const request = new Request(`http://localhost${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
      const r = await app.fetch(request);
      return { status: r.status, body: await r.json() };
    };
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
  afterAll(() => closeServer(server));

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

const admin = { authorization: "Bearer admin" };
const doc1 = { type: "document", id: "1" };
const user1 = { type: "user", id: "1", relation: "" };
const BUNDLE = {
  name: "b1",
  arguments: ["docId", "userId"],
  operations: [
    {
      relationships_write: ["document:{{.docId}}#viewer@user:{{.userId}}"],
      relationships_delete: [],
      attributes_write: [],
      attributes_delete: [],
    },
  ],
};

/**
 * A valid request body of every route that does not stream (a route added to the table later fails the test
 * below until it has one here). `{id}` (the tenant delete) is the tenant "gone".
 */
const VALID_BODIES = new Map<ApiRoute, unknown>([
  [ROUTES.tenantsCreate, { id: "t3", name: "third" }],
  [ROUTES.tenantsList, { page_size: 10 }],
  [ROUTES.tenantsDelete, undefined],
  [ROUTES.schemasWrite, { schema: TEST_SCHEMA }],
  [
    ROUTES.schemasPartialWrite,
    { metadata: { schema_version: "" }, partials: { document: { write: ["relation editor @user"] } } },
  ],
  [ROUTES.schemasRead, { metadata: { schema_version: "" } }],
  [ROUTES.schemasList, { page_size: 10 }],
  [ROUTES.schemasDiff, { schema: TEST_SCHEMA }],
  [ROUTES.dataWrite, { metadata: {}, tuples: [tuple("document:2", "owner", "user:2")] }],
  [ROUTES.relationshipsWrite, { metadata: {}, tuples: [tuple("document:3", "owner", "user:3")] }],
  [ROUTES.relationshipsRead, { metadata: {}, filter: { entity: { type: "document", ids: ["1"] } } }],
  [ROUTES.attributesRead, { metadata: {}, filter: { entity: { type: "document", ids: ["1"] } } }],
  [
    ROUTES.dataDelete,
    {
      tuple_filter: { entity: { type: "document", ids: ["2"] } },
      attribute_filter: { entity: { type: "document", ids: ["2"] } },
    },
  ],
  [ROUTES.relationshipsDelete, { filter: { entity: { type: "document", ids: ["3"] } } }],
  [ROUTES.bundleRun, { name: "b1", arguments: { docId: "5", userId: "5" } }],
  [ROUTES.bundleWrite, { bundles: [{ ...BUNDLE, name: "b2" }] }],
  [ROUTES.bundleRead, { name: "b1" }],
  [ROUTES.bundleDelete, { name: "b2" }],
  [ROUTES.check, checkBody("document:1", "edit", "user:1")],
  [
    ROUTES.bulkCheck,
    { metadata: { depth: 20 }, items: [{ entity: doc1, permission: "view", subject: user1 }] },
  ],
  [ROUTES.expand, { metadata: {}, entity: doc1, permission: "view" }],
  [
    ROUTES.lookupEntity,
    { metadata: { depth: 20 }, entity_type: "document", permission: "view", subject: user1 },
  ],
  [
    ROUTES.lookupSubject,
    { metadata: { depth: 20 }, entity: doc1, permission: "view", subject_reference: { type: "user" } },
  ],
  [ROUTES.subjectPermission, { metadata: { depth: 20 }, entity: doc1, subject: user1 }],
  [ROUTES.explain, checkBody("document:1", "edit", "user:1")],
  // NDJSON, sent as it stands: a dump's first line
  [
    ROUTES.dataImport,
    '{"type":"header","format":"pemba-dump","version":1,"tenant":"t1","schema_version":"","snap_token":"","created_at":"2030-01-01T00:00:00Z"}\n',
  ],
  ...authzenBodies(AUTHZEN_ROUTES),
  ...authzenBodies(AUTHZEN_ROOT_ROUTES),
  [AUTHZEN_ROUTES.configurationWellKnown, undefined],
]);

/** Valid bodies of the AuthZEN routes (the discovery document is a GET: no body). */
function authzenBodies(set: typeof AUTHZEN_ROOT_ROUTES): [ApiRoute, unknown][] {
  const subject = { type: "user", id: "1" };
  const resource = { type: "document", id: "1" };
  const action = { name: "edit" };
  return [
    [set.evaluation, { subject, action, resource }],
    [
      set.evaluations,
      { subject, action, evaluations: [{ resource }, { resource: { type: "document", id: "2" } }] },
    ],
    [set.searchSubject, { subject: { type: "user" }, action, resource }],
    [set.searchResource, { subject, action, resource: { type: "document" } }],
    [set.searchAction, { subject, resource }],
    [set.configuration, undefined],
  ];
}

/**
 * What a client sees of an answer: status, body, and every header but the date and the connection's (apart: the
 * node:http path closes the connection after a body over the limit instead of reading the rest).
 */
interface Seen {
  status: number;
  headers: Record<string, string>;
  body: string;
}

type Body = string | (() => ReadableStream<Uint8Array>) | undefined;

async function send(url: string, method: string, path: string, body: Body, headers: Record<string, string>) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "function" ? body() : body,
    ...(typeof body === "function" ? { duplex: "half" } : {}),
  } as RequestInit);
  const seen: Seen = { status: res.status, headers: {}, body: await res.text() };
  res.headers.forEach((value, name) => {
    if (name !== "date" && name !== "keep-alive" && name !== "connection") seen.headers[name] = value;
  });
  return { seen, connection: res.headers.get("connection") };
}

/** A body over the limit without a Content-Length: two chunks, chunked encoding. */
const chunkedOverLimit = () =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(`{"x":"${"a".repeat(BODY_LIMIT / 2)}`));
      controller.enqueue(new TextEncoder().encode(`${"a".repeat(BODY_LIMIT / 2)}"}`));
      controller.close();
    },
  });

/**
 * An answer with what two apps answer differently for the same requests replaced: times (`created_at`) and
 * schema versions (an xid: the time and a random part), each named by the order it first appeared in on its server.
 */
function comparable(text: string, versions: Map<string, string>): string {
  return text.replace(/"created_at":"[^"]*"/g, '"created_at":"<time>"').replace(/"[0-9a-v]{20}"/g, (xid) => {
    if (!versions.has(xid)) versions.set(xid, `"<version ${versions.size}>"`);
    return versions.get(xid)!;
  });
}

describe("every route that does not stream: node:http answers exactly as Hono does", () => {
  const routes = ROUTE_LIST.filter((route) => !route.endpoint.stream);
  type Side = { url: string; server: Server; versions: Map<string, string> };
  let direct: Side;
  let hono: Side;
  const compacted: string[] = [];
  /** The paths of the requests the node:http side handed to Hono. */
  const toHono: string[] = [];
  beforeAll(async () => {
    // two apps on two stores, one answering through apiRequestListener, one through Hono only: the same requests
    // in the same order leave them in the same state
    const app = comparedApp();
    const fetchOfHono = app.fetch;
    app.fetch = (request, ...rest) => {
      toHono.push(new URL(request.url).pathname);
      return fetchOfHono(request, ...rest);
    };
    const noted = apiRequestListener(app, (route) => compacted.push(route.operationId));
    direct = { ...(await listenOn(noted)), versions: new Map() };
    hono = { ...(await listenOn(getRequestListener(comparedApp().fetch))), versions: new Map() };
    for (const { url, versions } of [direct, hono]) {
      const gone = JSON.stringify({ id: "gone", name: "deleted below" });
      expect((await send(url, "POST", "/v1/tenants/create", gone, admin)).seen.status).toBe(200);
      const setup: [string, unknown][] = [
        ["schemas/write", { schema: TEST_SCHEMA }],
        ["data/write", { metadata: {}, tuples: [tuple("document:1", "owner", "user:1")] }],
        ["bundle/write", { bundles: [BUNDLE] }],
      ];
      for (const [path, body] of setup) {
        const { seen: answer } = await send(
          url,
          "POST",
          `/v1/tenants/t1/${path}`,
          JSON.stringify(body),
          admin,
        );
        expect(answer.status).toBe(200);
        comparable(answer.body, versions);
      }
    }
  });
  afterAll(async () => {
    await closeServer(direct.server);
    await closeServer(hono.server);
  });

  it("every such route has a valid body here", () => {
    expect(routes.filter((route) => !VALID_BODIES.has(route)).map((r) => r.operationId)).toEqual([]);
  });

  it.each(routes.map((route) => [`${route.method} ${route.path}`, route] as const))(
    "%s: valid, malformed, too large, unknown or invalid tenant, bad auth, CORS",
    async (_name, route) => {
      const path = (tenant: string) => route.path.replace("{tenant_id}", tenant).replace("{id}", tenant);
      // the tenant delete deletes "gone" (and nothing else) in every case
      const own = route.path.includes("{id}") ? "gone" : "t1";
      const valid = VALID_BODIES.get(route);
      const body =
        valid === undefined ? undefined : typeof valid === "string" ? valid : JSON.stringify(valid);
      // a GET (AuthZEN's discovery document) sends no body in any case
      const get = route.method === "GET";
      const cases: [string, string, Body, Record<string, string>, string?][] = [
        ["valid", path(own), body, admin],
        ["malformed JSON", path(own), '{"metadata": {', admin],
        ["a declared length over the limit", path(own), "x".repeat(BODY_LIMIT + 1), admin],
        ["a chunked body over the limit", path(own), chunkedOverLimit, admin],
        ["an unknown tenant", path("t404"), body, admin],
        ["an invalid tenant id (percent-encoded)", path("a%20b"), body, admin],
        ["an undecodable path parameter", path("%E0%A4"), body, admin],
        ["no key", path(own), body, {}],
        ["a wrong key", path(own), body, { authorization: "Bearer nope" }],
        ["a key for another tenant", path(own), body, { authorization: "Bearer k2" }],
        ["an allowed origin", path(own), body, { ...admin, origin: "https://app.example" }],
        ["a refused origin", path(own), body, { ...admin, origin: "https://evil.example" }],
        ["another method", path(own), undefined, admin, "PUT"],
      ];
      for (const [what, url, caseBody, headers, method = route.method] of cases) {
        const sent = get && method === "GET" ? undefined : caseBody;
        toHono.length = 0;
        const { seen: a, connection } = await send(direct.url, method, url, sent, headers);
        // only a path parameter that is not valid percent-encoding and another method go to Hono
        const undecodable = what === "an undecodable path parameter" && route.path.includes("{");
        const handedOver = undecodable || what === "another method";
        expect({ what, toHono: toHono.length }).toEqual({ what, toHono: handedOver ? 1 : 0 });
        // a 413 included: both keep the connection while they drain the rest of the body (then close it)
        const { seen: b, connection: honoConnection } = await send(hono.url, method, url, sent, headers);
        expect({ what, connection }).toEqual({ what, connection: honoConnection });
        // AuthZEN's discovery document names the server's own origin
        a.body = comparable(a.body.replaceAll(direct.url, "<origin>"), direct.versions);
        b.body = comparable(b.body.replaceAll(hono.url, "<origin>"), hono.versions);
        expect({ what, ...a }).toEqual({ what, ...b });
        if (what === "valid") expect({ what, status: a.status }).toEqual({ what, status: 200 });
      }
    },
  );

  it("the write hook sees every request of a route of the table, answered on either path", () => {
    expect(compacted.filter((id) => id === ROUTES.dataWrite.operationId).length).toBeGreaterThan(10);
    expect(compacted).toContain(ROUTES.check.operationId);
    expect(compacted).not.toContain(ROUTES.watch.operationId);
  });
});

describe("apiRequestListener: a client that goes away before its body ended", () => {
  it("the request fails with ERROR_CODE_CANCELLED (observed and logged) instead of waiting forever", async () => {
    const seen: RequestInfo[] = [];
    let observed!: () => void;
    const done = new Promise<void>((r) => {
      observed = r;
    });
    const app = comparedApp((info) => {
      seen.push(info);
      observed();
    });
    const { url, server } = await listenOn(apiRequestListener(app));
    try {
      const socket = connect(Number(new URL(url).port), "127.0.0.1");
      await new Promise<void>((r) => socket.once("connect", () => r()));
      socket.write(
        "POST /v1/tenants/t1/data/write HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin\r\n" +
          'Content-Length: 100\r\n\r\n{"metadata":',
      );
      await new Promise((r) => setTimeout(r, 50));
      socket.destroy();
      await done;
      expect(seen.map(({ route, status, error }) => ({ route, status, error }))).toEqual([
        {
          route: "/v1/tenants/:tenant_id/data/write",
          status: 499,
          error: { code: 1, message: "ERROR_CODE_CANCELLED", errorCode: "ERROR_CODE_CANCELLED" },
        },
      ]);
    } finally {
      await closeServer(server);
    }
  });
});

describe("decodedParams: a match's path parameters", () => {
  it("percent-decodes them; undefined when one is not valid percent-encoding", () => {
    const params = (url: string, method = "POST") => decodedParams(matchRoute(method, url)!);
    expect(params("/v1/tenants/t1/permissions/check?x=1")).toEqual({ tenant_id: "t1" });
    expect(params("/v1/tenants/a%40b/permissions/check")).toEqual({ tenant_id: "a@b" });
    expect(params("/v1/tenants/a%2Fb", "DELETE")).toEqual({ id: "a/b" });
    expect(params("/v1/tenants/%E0%A4/permissions/check")).toBeUndefined();
  });
});

describe("routeMatcher: the route of a request line, kept for the next request", () => {
  it("gives what matchRoute and decodedParams give, for new and repeated lines, past the number kept", () => {
    const match = routeMatcher();
    const direct = (method: string, url: string) => {
      const m = matchRoute(method, url);
      return m === undefined ? undefined : { match: m, params: decodedParams(m) };
    };
    const lines: [string, string][] = [
      ["POST", "/v1/tenants/t1/permissions/check"],
      ["GET", "/v1/tenants/t1/permissions/check"],
      ["POST", "/v1/tenants/%E0%A4/permissions/check"],
      ["DELETE", "/v1/tenants/a%2Fb"],
      ["GET", "/healthz"],
      ...Array.from({ length: 1500 }, (_, i): [string, string] => ["POST", `/v1/tenants/t${i}/data/write`]),
    ];
    for (let pass = 0; pass < 2; pass++) {
      for (const [method, url] of lines) expect(match(method, url)).toEqual(direct(method, url));
    }
    expect(match("POST", "/v1/tenants/t1/permissions/check")?.params).toEqual({ tenant_id: "t1" });
    expect(match("GET", "/healthz")).toBeUndefined();
  });
});

describe("writeAnswer", () => {
  it("pipes a stream body (chunked) and writes a string body with its Content-Length", async () => {
    const { url, server } = await listenOn((req, res) => {
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("a\n"));
          controller.enqueue(new TextEncoder().encode("b\n"));
          controller.close();
        },
      });
      const body = req.url === "/stream" ? stream : "héllo";
      writeAnswer(res, { status: 200, headers: ["content-type", "text/plain"], body });
    });
    try {
      const streamed = await fetch(`${url}/stream`);
      expect(streamed.headers.get("transfer-encoding")).toBe("chunked");
      expect(await streamed.text()).toBe("a\nb\n");
      const text = await fetch(`${url}/text`);
      expect(text.headers.get("content-length")).toBe("6");
      expect(await text.text()).toBe("héllo");
    } finally {
      await closeServer(server);
    }
  });
});
