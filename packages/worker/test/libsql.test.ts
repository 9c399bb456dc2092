/**
 * The Worker on a libSQL server over HTTP, in workerd: `wrangler dev` with PEMBA_DATABASE = an http:// URL and
 * PEMBA_DATABASE_TOKEN, against a protocol double of sqld (test/fake-sqld.ts: Hrana 2 over HTTP on node:sqlite).
 * This exercises the bundled web build of @libsql/client (fetch), the embedded migrations, and that the data
 * lives in the database (a restarted Worker still sees it), not in the isolate.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeSqld, startFakeSqld } from "./fake-sqld.ts";
import { allowed, checkBody, DATA, denied, SCHEMA } from "./fixtures.ts";
import { startWranglerDev, type WranglerDev } from "./wrangler-dev.ts";

const TOKEN = "sqld-test-token";

describe("Worker on workerd with a libSQL database over HTTP", () => {
  let sqld: FakeSqld;
  let w: WranglerDev | undefined;
  beforeAll(async () => {
    // The server first refuses the Worker's token, to test the startup failure and its retry.
    sqld = await startFakeSqld("rotated-token");
    w = await startWranglerDev({ PEMBA_DATABASE: sqld.url, PEMBA_DATABASE_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await w?.close();
    await sqld?.close();
  });

  const check = (entity: string, permission: string, subject: string) =>
    w!.call("/v1/tenants/t1/permissions/check", checkBody(entity, permission, subject));

  it("a database that refuses the token: 503 Unavailable (token never echoed), retried on the next request", async () => {
    const refused = await w!.call("/healthz");
    expect(refused).toMatchObject({
      status: 503,
      body: { code: 14, message: `cannot open database ${sqld.url}: UNKNOWN: Unauthorized`, details: [] },
    });
    expect(JSON.stringify(refused.body)).not.toContain(TOKEN);
    expect(sqld.query("SELECT name FROM sqlite_master")).toEqual([]);

    sqld.setToken(TOKEN);
    expect(await w!.call("/healthz")).toMatchObject({ status: 200, body: { status: "SERVING" } });
  });

  it("migrates the database on first use and serves the API from it", async () => {
    const tables = sqld
      .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .map((r) => r.name);
    expect(tables).toEqual([
      "__drizzle_migrations",
      "attributes",
      "bundles",
      "pemba_meta",
      "schemas",
      "tenants",
      "transactions",
      "tuples",
    ]);

    const schema = await w!.call("/v1/tenants/t1/schemas/write", { schema: SCHEMA });
    expect(schema).toMatchObject({ status: 200, body: { schema_version: expect.any(String) } });
    expect(Object.keys(schema.body as object)).toEqual(["schema_version"]);
    const data = await w!.call("/v1/tenants/t1/data/write", DATA);
    expect(data).toMatchObject({ status: 200, body: { snap_token: expect.any(String) } });
    expect(Object.keys(data.body as object)).toEqual(["snap_token"]);
    expect(sqld.query("SELECT count(*) AS n FROM tuples")).toEqual([{ n: 4 }]);

    expect(await check("document:1", "edit", "user:1")).toMatchObject({ status: 200, body: allowed(2) });
    expect((await check("document:1", "view", "user:3")).body).toEqual(allowed(5));
    expect((await check("document:2", "view", "user:9")).body).toEqual(allowed(4));
    expect(await check("document:1", "edit", "user:3")).toMatchObject({ status: 200, body: denied(3) });
    expect((await check("document:1", "view", "user:9")).body).toEqual(denied(6));
  });

  it("the Worker's libSQL client speaks Hrana 2 over HTTP: every request is POST /v2/pipeline", () => {
    // (no GET /v3 probe, no /v3/pipeline, no /v3-protobuf: see fake-sqld.ts for why)
    expect([...new Set(sqld.requests())]).toEqual(["POST /v2/pipeline"]);
    expect(sqld.pipelines()).toBeGreaterThan(10);
  });

  it("the data lives in the database: a restarted Worker answers from it", async () => {
    await w!.close();
    w = await startWranglerDev({ PEMBA_DATABASE: sqld.url, PEMBA_DATABASE_TOKEN: TOKEN });
    expect((await check("document:1", "edit", "user:2")).body).toEqual(allowed(3));
    expect((await check("document:1", "edit", "user:3")).body).toEqual(denied(3));
  }, 120_000);
});
