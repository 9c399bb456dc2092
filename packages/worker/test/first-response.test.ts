/**
 * The shipped Worker (packages/worker/src/index.ts) with the shipped wrangler.toml (`d1:DB`, local D1) under
 * `wrangler dev --ip 127.0.0.1`: a fresh isolate's first check reads the keys it needs and starts no background
 * work; a later check that hands a look at the database to the background reaches the client before that work has
 * finished. The order is read from the Worker's own log, one stream written by one isolate in order: the client
 * sends its next request only once it has the check's answer, so that request's line coming before the
 * "background work done" line shows the answer reached the client while the work still ran.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";
import { checkBody, SCHEMA, tuple } from "./fixtures.ts";

/** Documents owned by users: a tenant far larger than what one check reads. */
const DOCUMENTS = 20_000;
const BATCH = 1_000;

/** The JSON lines the Worker wrote (its request lines and background lines), in order. */
function workerLines(w: WranglerDev): Record<string, unknown>[] {
  return w
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function until<T>(what: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = what();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`not seen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("a fresh isolate's checks (shipped entry and wrangler.toml, local D1)", () => {
  const state = mkdtempSync(join(tmpdir(), "pemba-first-response-"));
  let w: WranglerDev;
  /**
   * The request log on; each D1 round trip waits 200 ms (PEMBA_D1_SIMULATE, around the binding), so background
   * work lasts longer than a client's next request; a look at the database is due after 2 s.
   */
  const vars = {
    PEMBA_LOG_LEVEL: "info",
    PEMBA_D1_SIMULATE: "replica=200ms,primary=200ms",
    PEMBA_REPLICA_REFRESH: "2s",
  };

  beforeAll(async () => {
    const seeding = await startWranglerDev({ PEMBA_LOG_LEVEL: "info" }, 120_000, state, "log");
    try {
      expect((await seeding.call("/v1/tenants/t1/schemas/write", { schema: SCHEMA })).status).toBe(200);
      for (let from = 0; from < DOCUMENTS; from += BATCH) {
        const tuples = Array.from({ length: BATCH }, (_, i) =>
          tuple(`document:${from + i}`, "owner", `user:${from + i}`),
        );
        const res = await seeding.call("/v1/tenants/t1/data/write", { metadata: {}, tuples, attributes: [] });
        expect(res.status).toBe(200);
      }
    } finally {
      await seeding.close();
    }
    // a new wrangler dev on the same local D1: a new workerd process, so a new isolate with nothing cached
    w = await startWranglerDev(vars, 120_000, state, "log");
  });

  afterAll(async () => {
    await w?.close();
    rmSync(state, { recursive: true, force: true });
  });

  it("the first check reads its own keys, starts no background work, and the bundle imports no Node built-in", async () => {
    const sent = Date.now();
    const check = await w.call("/v1/tenants/t1/permissions/check", checkBody("document:7", "edit", "user:7"));
    expect(check).toMatchObject({ status: 200, body: { can: "CHECK_RESULT_ALLOWED" } });
    // sent only now that the client holds the check's answer
    expect((await w.call("/healthz")).status).toBe(200);
    const lines = await until(() => {
      const all = workerLines(w);
      return all.at(-1)?.route === "/healthz" ? all : undefined;
    }, 10_000);
    const first = lines.find((l) => l.route === "/v1/tenants/:tenant_id/permissions/check")!;
    // a few keys of a 20,000-row tenant: its own reads, one statement per walk level, and the look
    expect(first.rows_read).toBeLessThan(100);
    expect(lines.filter((l) => l.msg !== undefined)).toEqual([]);

    // a check once the look is due (2 s after the first one's) answers from memory and hands the look to the
    // background; the client's next request is answered while that look still runs
    await new Promise((r) => setTimeout(r, Math.max(0, sent + 3_000 - Date.now())));
    expect(
      (await w.call("/v1/tenants/t1/permissions/check", checkBody("document:7", "edit", "user:7"))).body,
    ).toMatchObject({ can: "CHECK_RESULT_ALLOWED" });
    expect((await w.call("/healthz")).status).toBe(200);
    const done = await until(() => {
      const all = workerLines(w);
      const at = all.findIndex((l) => l.msg === "background work done");
      return at < 0 ? undefined : { all, at };
    }, 30_000);
    const routes = done.all.map((l) => l.route ?? l.msg);
    const checkAt = routes.lastIndexOf("/v1/tenants/:tenant_id/permissions/check");
    const healthAt = routes.lastIndexOf("/healthz");
    expect(checkAt).toBeLessThan(healthAt);
    expect(healthAt).toBeLessThan(done.at);
    expect(done.all[checkAt]!.statements).toBe(0);
    // the look: the head and the change feed after the replica, in one batch
    expect(done.all[done.at]).toMatchObject({ statements: 2, by_kind: { freshness: 2 } });
    expect(done.all[done.at]!.rows_read).toBeLessThan(100);
    // wrangler warns of a Node built-in it cannot bundle (startWranglerDev fails on it too)
    expect(w.output()).not.toMatch(/built into node|nodejs_compat/);
  });
});
