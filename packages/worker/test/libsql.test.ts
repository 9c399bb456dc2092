/**
 * The Worker on a libSQL server over HTTP, in workerd: `wrangler dev` with PEMBA_DATABASE = an http:// URL and
 * PEMBA_DATABASE_TOKEN, against a real sqld (@pemba/core/testing/node: PEMBA_SQLD or ../shared/tools/sqld/sqld)
 * that checks Ed25519-signed JWTs, behind a forwarder that records the request lines. This exercises the bundled web
 * build of @libsql/client (fetch), the embedded migrations, and that the data lives in the database (a restarted
 * Worker still sees it), not in the isolate. Without an sqld binary this reports "real sqld NOT verified".
 */
import {
  describeWithSqld,
  type RecordingProxy,
  recordRequests,
  type SqldKey,
  type SqldServer,
  sqldKey,
  startSqld,
} from "@pemba/core/testing/node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";
import { allowed, checkBody, DATA, denied, SCHEMA } from "./fixtures.ts";

describeWithSqld("Worker on workerd with a libSQL database over HTTP (a real sqld)", () => {
  let sqld: SqldServer;
  let proxy: RecordingProxy;
  let oldKey: SqldKey;
  let newKey: SqldKey;
  let token: string;
  let w: WranglerDev | undefined;
  beforeAll(async () => {
    oldKey = await sqldKey();
    newKey = await sqldKey();
    token = await newKey.token();
    // The server first trusts only a key that did not sign the Worker's token, to test the startup failure and
    // its retry.
    sqld = await startSqld({ keys: [oldKey] });
    proxy = await recordRequests(sqld.url);
    w = await startWranglerDev({ PEMBA_DATABASE: proxy.url, PEMBA_DATABASE_TOKEN: token });
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    await proxy?.close();
    await sqld?.stop();
  });

  /** Runs SQL on the server directly (not through the forwarder). */
  const query = (sql: string) => sqld.query(sql, token);

  const check = (entity: string, permission: string, subject: string) =>
    w!.call("/v1/tenants/t1/permissions/check", checkBody(entity, permission, subject));

  it("a database that refuses the token: 503 Unavailable (token never echoed), retried on the next request", async () => {
    const refused = await w!.call("/healthz");
    expect(refused).toMatchObject({
      status: 503,
      body: {
        code: 14,
        message: `cannot open database ${proxy.url}: SERVER_ERROR: Server returned HTTP status 401`,
        details: [],
      },
    });
    expect(JSON.stringify(refused.body)).not.toContain(token);

    // the key rotated in: the server now trusts both keys
    await sqld.restart({ keys: [oldKey, newKey] });
    expect(await query("SELECT name FROM sqlite_master WHERE name NOT LIKE 'libsql_%'")).toEqual([]);
    expect(await w!.call("/healthz")).toMatchObject({ status: 200, body: { status: "SERVING" } });
  });

  it("migrates the database on first use and serves the API from it", async () => {
    const tables = (
      await query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'libsql_%' ORDER BY name",
      )
    ).map((r) => r.name);
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
    expect(await query("SELECT count(*) AS n FROM tuples")).toEqual([{ n: 4 }]);

    expect(await check("document:1", "edit", "user:1")).toMatchObject({ status: 200, body: allowed(2) });
    expect((await check("document:1", "view", "user:3")).body).toEqual(allowed(5));
    expect((await check("document:2", "view", "user:9")).body).toEqual(allowed(4));
    expect(await check("document:1", "edit", "user:3")).toMatchObject({ status: 200, body: denied(3) });
    expect((await check("document:1", "view", "user:9")).body).toEqual(denied(6));
  });

  it("the Worker's libSQL client speaks Hrana 2 over HTTP: every request is POST /v2/pipeline", () => {
    // @libsql/client 0.18 opens HTTP connections with hrana-client's default protocol version 2
    expect([...new Set(proxy.requests())]).toEqual(["POST /v2/pipeline"]);
    expect(proxy.requests().length).toBeGreaterThan(10);
  });

  it("the data lives in the database: a restarted Worker answers from it", async () => {
    await w!.close();
    w = await startWranglerDev({ PEMBA_DATABASE: proxy.url, PEMBA_DATABASE_TOKEN: token });
    expect((await check("document:1", "edit", "user:2")).body).toEqual(allowed(3));
    expect((await check("document:1", "edit", "user:3")).body).toEqual(denied(3));
  }, 120_000);
});
