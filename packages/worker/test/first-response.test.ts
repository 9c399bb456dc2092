/**
 * The shipped Worker (packages/worker/src/index.ts) with the shipped wrangler.toml (`d1:DB`, local D1) under
 * `wrangler dev --ip 127.0.0.1`: a fresh isolate's first check reaches the client before the background work that
 * check started has finished. The order is read from the Worker's own log, one stream written by one isolate in
 * order: the client sends a second request only once it has the check's answer, so that request's line coming
 * before the "background work done" line shows the answer reached the client while the work still ran.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkBody, SCHEMA, tuple } from "./fixtures.ts";
import { startWranglerDev, type WranglerDev } from "./wrangler-dev.ts";

/** Documents owned by users: enough rows that loading them takes the background work many D1 round trips. */
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

describe("a fresh isolate's first check (shipped entry and wrangler.toml, local D1)", () => {
  const state = mkdtempSync(join(tmpdir(), "pemba-first-response-"));
  let w: WranglerDev;
  const vars = { PEMBA_LOG_LEVEL: "info" };

  beforeAll(async () => {
    const seeding = await startWranglerDev(vars, 120_000, state, "log");
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

  it("answers before its background work ends, and the bundle imports no Node built-in", async () => {
    const check = await w.call("/v1/tenants/t1/permissions/check", checkBody("document:7", "edit", "user:7"));
    expect(check).toMatchObject({ status: 200, body: { can: "CHECK_RESULT_ALLOWED" } });
    // sent only now that the client holds the check's answer; it reads nothing, so starts no work of its own
    expect((await w.call("/healthz")).status).toBe(200);

    const done = await until(() => {
      const lines = workerLines(w);
      const at = lines.findIndex((l) => l.msg === "background work done");
      return at < 0 ? undefined : { lines, at };
    }, 120_000);
    const routes = done.lines.map((l) => l.route ?? l.msg);
    const checkAt = routes.indexOf("/v1/tenants/:tenant_id/permissions/check");
    const healthAt = routes.lastIndexOf("/healthz");
    // the check started the work; the request sent after its answer arrived was answered while the work ran
    expect(checkAt).toBeGreaterThanOrEqual(0);
    expect(checkAt).toBeLessThan(healthAt);
    expect(healthAt).toBeLessThan(done.at);
    // the work read D1 (what it read depends on the replica's settings)
    expect(done.lines[done.at]!.statements).toBeGreaterThan(0);
    // wrangler warns of a Node built-in it cannot bundle (startWranglerDev fails on it too)
    expect(w.output()).not.toMatch(/built into node|nodejs_compat/);
  });
});
