/**
 * The Worker module's fetch handler called directly (in Node, no workerd): startup failures and the
 * once-per-isolate app. The runtime behaviour is covered in workerd by worker.test.ts and libsql.test.ts.
 */

import { compileSchema, parseSchema } from "@pemba/core";
import { describeWithSqld, recordRequests, startSqld } from "@pemba/core/testing/node";
import { describe, expect, it } from "vitest";
import { createWorker, WARM_UP_SCHEMA } from "../src/handler.ts";

const worker = createWorker();

const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} };
const get = (path: string) => new Request(`http://worker.test${path}`);

describe("Worker entry", () => {
  it("a configuration error answers 500 with Permify's error body, and is retried per request", async () => {
    const res = await worker.fetch(get("/healthz"), { PEMBA_DATABASE: "file:pemba.db" }, ctx);
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual({
      code: 13,
      message:
        'PEMBA_DATABASE "file:pemba.db" is not supported on Workers; use "memory:", "d1:<BINDING>" (a D1 database binding) or a libsql://, https:// (or wss://) URL of a libSQL server',
      details: [],
    });
  });

  // a D1 binding as far as the check goes (a list's first binding bound, its second not)
  const bound = { prepare() {}, withSession() {} };
  it.each([
    ["d1:<BINDING>", { PEMBA_DATABASE: "d1:PEMBA_DB" }, "d1:PEMBA_DB", "PEMBA_DB"],
    ["d1:DB,DB2 with DB2", { PEMBA_DATABASE: "d1:DB,DB2", DB: bound }, "d1:DB,DB2", "DB2"],
  ])(
    "%s without such a D1 binding answers 500 naming the setting and the missing binding",
    async (_, env, database, name) => {
      const res = await worker.fetch(get("/healthz"), env as never, ctx);
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({
        code: 13,
        message: `PEMBA_DATABASE "${database}": no D1 database is bound as ${name}; add a [[d1_databases]] binding = "${name}" to wrangler.toml`,
        details: [],
      });
    },
  );

  it("builds the store and app once per isolate and reuses them", async () => {
    const auth = { authorization: "Bearer k1" };
    const env = { PEMBA_AUTH_KEYS: "k1" };
    const create = new Request("http://worker.test/v1/tenants/create", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ id: "acme", name: "Acme" }),
    });
    expect((await worker.fetch(create, env, ctx)).status).toBe(200);
    const list = () =>
      new Request("http://worker.test/v1/tenants/list", {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ page_size: 10 }),
      });
    const ids = async (res: Response) =>
      ((await res.json()) as { tenants: { id: string }[] }).tenants.map((t) => t.id).sort();
    expect(await ids(await worker.fetch(list(), env, ctx))).toEqual(["acme", "t1"]);
    // Same isolate: the first configuration stays (a new deployment or changed vars get a new isolate).
    expect(await ids(await worker.fetch(list(), { ...env, PEMBA_AUTH_KEYS: "other" }, ctx))).toEqual([
      "acme",
      "t1",
    ]);
    // The cron handler garbage-collects the same store.
    await expect(worker.scheduled({}, env, ctx)).resolves.toBeUndefined();
  });

  const listTenants = (key: string) =>
    new Request("http://worker.test/v1/tenants/list", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ page_size: 10 }),
    });

  it("with the module's env (index.ts), builds the store and app at once: the first request's env is not read", async () => {
    const early = createWorker({ PEMBA_AUTH_KEYS: "k1" });
    // the request's env alone could not open anything: the app was built from the module's env
    const res = await early.fetch(listTenants("k1"), { PEMBA_DATABASE: "file:pemba.db" }, ctx);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ tenants: [{ id: "t1" }] });
  });

  it("with a module env that cannot start, the first request answers the error from its own env", async () => {
    const broken = createWorker({ PEMBA_DATABASE: "file:pemba.db" });
    const res = await broken.fetch(get("/healthz"), { PEMBA_DATABASE: "file:other.db" }, ctx);
    expect(res.status).toBe(500);
    expect(((await res.json()) as { message: string }).message).toContain('PEMBA_DATABASE "file:other.db"');
  });

  it("the schema compiled at module evaluation (the parser's and compiler's code, before any request) is valid", () => {
    const compiled = compileSchema(parseSchema(WARM_UP_SCHEMA));
    expect(Object.keys(parseSchema(WARM_UP_SCHEMA).entities)).toEqual(["user", "team", "doc"]);
    expect(compiled).toBeDefined();
  });
});

describeWithSqld("Worker entry on a real sqld", () => {
  it("with the module's env of a libSQL server, opens nothing at once (I/O only within a request): the first request does", async () => {
    const sqld = await startSqld();
    const proxy = await recordRequests(sqld.url);
    try {
      const later = createWorker({ PEMBA_DATABASE: proxy.url });
      await new Promise((done) => setTimeout(done, 100));
      expect(proxy.requests()).toEqual([]);
      const res = await later.fetch(get("/healthz"), { PEMBA_DATABASE: proxy.url }, ctx);
      expect(res.status).toBe(200);
      expect(proxy.requests().length).toBeGreaterThan(0);
      expect(new Set(proxy.requests())).toEqual(new Set(["POST /v2/pipeline"]));
    } finally {
      await proxy.close();
      await sqld.stop();
    }
  });
});
