import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, startServe } from "../src/testing/cli-process.ts";
import { check, post, tuple, writeSchema, writeTuples } from "./api-client.ts";

describe("pemba serve on a SQLite file", () => {
  let dir: string;
  let server: CliProcess & { url: string };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "pemba-serve-"));
    server = await startServe(["--database", join(dir, "authz.db")]);
  });
  afterAll(async () => {
    if (server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints one startup line with address, database and auth mode", () => {
    const startup = server
      .stdout()
      .split("\n")
      .filter((l) => l.includes('"url"'));
    expect(startup).toHaveLength(1);
    const entry = JSON.parse(startup[0]);
    expect(entry.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(entry.database).toBe(`sqlite:${join(dir, "authz.db")}`);
    expect(entry.store).toBe("sqlite");
    expect(entry.auth).toBe("none");
    expect(existsSync(join(dir, "authz.db"))).toBe(true);
  });

  it("writes a schema and data, then answers checks ALLOWED and DENIED", async () => {
    const version = await writeSchema(server.url);
    expect(version).not.toBe("");
    await writeTuples(server.url, [
      tuple("document:1", "owner", "user:alice"),
      tuple("document:1", "viewer", "user:bob"),
    ]);
    expect(await check(server.url, "document:1", "view", "user:alice")).toBe("CHECK_RESULT_ALLOWED");
    expect(await check(server.url, "document:1", "view", "user:bob")).toBe("CHECK_RESULT_ALLOWED");
    expect(await check(server.url, "document:1", "edit", "user:bob")).toBe("CHECK_RESULT_DENIED");
    expect(await check(server.url, "document:1", "view", "user:carol")).toBe("CHECK_RESULT_DENIED");
    expect(await check(server.url, "document:2", "view", "user:alice")).toBe("CHECK_RESULT_DENIED");
  });

  it("logs one JSON line per request with method, route, status and ms", async () => {
    const checkLines = () =>
      server
        .stdout()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l))
        .filter((e) => e.route === "/v1/tenants/:tenant_id/permissions/check");
    // The log pipe may trail the HTTP responses by a moment.
    for (let i = 0; i < 50 && checkLines().length < 5; i++) await new Promise((r) => setTimeout(r, 20));
    const requests = checkLines();
    expect(requests).toHaveLength(5);
    for (const e of requests) {
      expect(e).toMatchObject({ level: 30, method: "POST", status: 200, msg: "request" });
      expect(typeof e.ms).toBe("number");
    }
  });

  it("logs a failed request at warn with its error", async () => {
    const r = await post(server.url, "/v1/tenants/t1/permissions/check", {
      metadata: { depth: 20 },
      entity: { type: "nope", id: "1" },
      permission: "view",
      subject: { type: "user", id: "alice" },
    });
    expect(r.status).toBe(404);
    const entry = await server.waitForLog((e) => e.status === 404);
    expect(entry).toMatchObject({
      level: 40,
      method: "POST",
      grpcCode: 5,
      error: "ERROR_CODE_SCHEMA_NOT_FOUND",
    });
  });

  it("serves Prometheus metrics: requests, latency, decisions, SQL time", async () => {
    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    const text = await response.text();
    const checkRoute = 'route="/v1/tenants/:tenant_id/permissions/check"';
    expect(text).toContain("# TYPE pemba_http_requests_total counter");
    expect(text).toContain(`pemba_http_requests_total{${checkRoute},status="200"} 5`);
    expect(text).toContain(`pemba_http_requests_total{${checkRoute},status="404"} 1`);
    expect(text).toContain("# TYPE pemba_http_request_duration_seconds histogram");
    expect(text).toContain(`pemba_http_request_duration_seconds_count{${checkRoute},status="200"} 5`);
    expect(text).toContain('pemba_check_decisions_total{decision="allowed"} 2');
    expect(text).toContain('pemba_check_decisions_total{decision="denied"} 3');
    expect(text).toContain("# TYPE pemba_sql_query_duration_seconds histogram");
    expect(text).toMatch(/pemba_sql_query_duration_seconds_count\{kind="[^"]+"\} [1-9]/);
    expect(text).toContain("pemba_process_cpu_seconds_total");
  });
});
