/**
 * The route table against both adapters: every route is matched by `matchRoute` (what the node:http adapter asks)
 * and by Hono (app.fetch) as the same route, so a request gets one label whichever adapter answers it.
 */
import { describe, expect, it } from "vitest";
import { PembaService } from "../service/index.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { createApp } from "./app.ts";
import type { RequestInfo } from "./pipeline.ts";
import { matchRoute, ROUTE_LIST, ROUTES } from "./route-table.ts";

/** A URL of a route's template, its parameters filled in. */
const urlOf = (path: string, value = "t1") => path.replace(/\{\w+\}/g, value);

function honoLabels() {
  const seen: RequestInfo[] = [];
  const app = createApp({
    service: new PembaService(new MemoryStore()),
    observe: (i) => seen.push(i),
    authzenTenant: "t1",
  });
  return async (method: string, path: string) => {
    seen.length = 0;
    const res = await app.fetch(
      new Request(`http://pemba.test${path}`, { method, body: method === "GET" ? null : "{}" }),
    );
    await res.body?.cancel();
    expect(seen).toHaveLength(1);
    return { route: seen[0]!.route, status: res.status };
  };
}

describe("the route table", () => {
  it("lists every endpoint once: one operation id and one method + path each", () => {
    const ids = ROUTE_LIST.map((r) => r.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const keys = ROUTE_LIST.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(ROUTE_LIST).toHaveLength(42);
  });

  it.each(ROUTE_LIST.map((r) => [r.operationId, r] as const))(
    "%s: the node matcher and Hono agree",
    async (_, route) => {
      const label = honoLabels();
      for (const value of ["t1", "a%40b"]) {
        const url = urlOf(route.path, value);
        const match = matchRoute(route.method, url);
        expect(match?.route).toBe(route);
        expect(matchRoute(route.method, `${url}?x=1`)?.route).toBe(route);
        const params = Object.keys(match!.params);
        expect(params).toEqual([...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
        expect(Object.values(match!.params)).toEqual(params.map(() => value));
        expect((await label(route.method, url)).route).toBe(route.endpoint.route);
      }
    },
  );

  it("a URL of no route is no match for the node matcher, and Hono's notFound or 501", async () => {
    const label = honoLabels();
    const check = urlOf(ROUTES.check.path);
    for (const url of [
      "/v1/tenants//permissions/check",
      `${check}/`,
      `${check}s`,
      "/v1/tenants/t1/x/permissions/check",
      "/v1/tenants/t1/nothing",
      "v1/tenants/t1/permissions/check",
    ]) {
      expect(matchRoute("POST", url)).toBeUndefined();
      if (url.startsWith("/")) expect(await label("POST", url)).toEqual({ route: "notFound", status: 404 });
    }
    // a known path with another method: Hono answers 501 under the route's label; the node matcher leaves it to Hono
    expect(matchRoute("GET", check)).toBeUndefined();
    expect(await label("GET", check)).toEqual({ route: ROUTES.check.endpoint.route, status: 501 });
  });

  it("AuthZEN's root paths are served only with an AuthZEN tenant", async () => {
    const app = createApp({ service: new PembaService(new MemoryStore()) });
    const res = await app.fetch(
      new Request("http://pemba.test/access/v1/evaluation", { method: "POST", body: "{}" }),
    );
    expect(res.status).toBe(404);
    expect(matchRoute("POST", "/access/v1/evaluation")?.route.authzenRoot).toBe(true);
    expect(app.handle(matchRoute("POST", "/access/v1/evaluation")!.route, {} as never)).toBeUndefined();
  });

  it("fixed segments first: POST /v1/tenants/create is tenants.create, DELETE of it deletes tenant `create`", async () => {
    const label = honoLabels();
    expect(matchRoute("POST", "/v1/tenants/create")?.route).toBe(ROUTES.tenantsCreate);
    expect(matchRoute("DELETE", "/v1/tenants/create")).toEqual({
      route: ROUTES.tenantsDelete,
      params: { id: "create" },
    });
    expect((await label("DELETE", "/v1/tenants/create")).route).toBe("/v1/tenants/:id");
  });

  it("the OpenAPI document has the table's operations (the AuthZEN root paths with --authzen-tenant)", async () => {
    const app = createApp({ service: new PembaService(new MemoryStore()), authzenTenant: "t1" });
    const doc = (await (await app.fetch(new Request("http://pemba.test/openapi.json"))).json()) as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([m, op]) => `${m.toUpperCase()} ${path} ${op.operationId}`),
    );
    expect(ops.sort()).toEqual(ROUTE_LIST.map((r) => `${r.method} ${r.path} ${r.operationId}`).sort());
  });
});
