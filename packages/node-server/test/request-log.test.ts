/**
 * The access log and metrics of a failed request come from the pipeline's RequestInfo (route from the core route
 * table, gRPC code and message of the error): no response is cloned or read again to find them, on the node:http
 * check path and on Hono's routes alike.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type RunningServer, startServer } from "../src/index.ts";
import { checkBody } from "./api-client.ts";

/**
 * The prototype that implements Response's body methods: Node's own, under @hono/node-server's lighter Response
 * (whose methods delegate to it and cannot be spied on).
 */
function bodyMethods(): Response {
  let proto: object = Response.prototype;
  while (!Object.getOwnPropertyDescriptor(proto, "clone")?.configurable) proto = Object.getPrototypeOf(proto);
  return proto as Response;
}

/** POSTs JSON and reads the answer without Response's text/json (which the test watches). */
async function post(url: string, path: string, body: unknown) {
  const response = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) });
  return { status: response.status, body: JSON.parse(Buffer.from(await response.arrayBuffer()).toString()) };
}

describe("request log lines and metric labels of errors", () => {
  const lines: Record<string, unknown>[] = [];
  let server: RunningServer;
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    server = await startServer({ database: "memory:", logger: pino({ level: "info" }, sink) });
  });
  afterAll(() => server.close());

  it("a 4xx's line and series carry its route and error code; no body is read again", async () => {
    const clone = vi.spyOn(bodyMethods(), "clone");
    const text = vi.spyOn(bodyMethods(), "text");
    const json = vi.spyOn(bodyMethods(), "json");
    try {
      // the node:http check path, then a route Hono serves
      const check = await post(
        server.url,
        "/v1/tenants/t1/permissions/check",
        checkBody("nope:1", "view", "user:1"),
      );
      expect(check.status).toBe(404);
      const read = await post(server.url, "/v1/tenants/t1/schemas/read", { metadata: { schema_version: 5 } });
      expect(read.status).toBe(400);
      expect(clone).not.toHaveBeenCalled();
      expect(text).not.toHaveBeenCalled();
      expect(json).not.toHaveBeenCalled();
    } finally {
      vi.restoreAllMocks();
    }
    const failed = lines.filter((l) => l.msg === "request failed");
    expect(failed).toEqual([
      expect.objectContaining({
        level: 40,
        method: "POST",
        route: "/v1/tenants/:tenant_id/permissions/check",
        status: 404,
        grpcCode: 5,
        error: "ERROR_CODE_SCHEMA_NOT_FOUND",
      }),
      expect.objectContaining({
        level: 40,
        method: "POST",
        route: "/v1/tenants/:tenant_id/schemas/read",
        status: 400,
        grpcCode: 3,
      }),
    ]);
    const metrics = await server.metrics.registry.metrics();
    expect(metrics).toContain(
      'pemba_http_requests_total{route="/v1/tenants/:tenant_id/permissions/check",status="404"} 1',
    );
    expect(metrics).toContain(
      'pemba_http_requests_total{route="/v1/tenants/:tenant_id/schemas/read",status="400"} 1',
    );
  });

  it("a 404 of a path no route serves logs that path (the metric keeps the one label notFound)", async () => {
    const before = lines.length;
    const missing = await fetch(`${server.url}/favicon.ico?size=32`);
    expect(missing.status).toBe(404);
    await missing.arrayBuffer();
    const logged = lines.slice(before).filter((l) => l.msg === "request failed");
    expect(logged).toEqual([
      expect.objectContaining({ method: "GET", route: "notFound", path: "/favicon.ico", status: 404 }),
    ]);
    // a matched route's line names its template only, never the path with its ids
    const check = await post(
      server.url,
      "/v1/tenants/t1/permissions/check",
      checkBody("nope:1", "view", "user:1"),
    );
    expect(check.status).toBe(404);
    const checkLine = lines.slice(before).filter((l) => l.msg === "request failed")[1]!;
    expect(checkLine.route).toBe("/v1/tenants/:tenant_id/permissions/check");
    expect("path" in checkLine).toBe(false);
    const metrics = await server.metrics.registry.metrics();
    expect(metrics).toContain('pemba_http_requests_total{route="notFound",status="404"} 1');
  });
});
