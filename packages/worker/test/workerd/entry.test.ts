/**
 * The shipped Worker entry (packages/worker/src/index.ts, `exports.default` of "cloudflare:workers") with the
 * shipped wrangler.toml's vars and D1 binding, called inside workerd: it opens its store on DB, applies the
 * migrations itself, and answers writes and checks; what it started in the background (the replica) answers the
 * same afterwards.
 */

import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";

const SCHEMA = `entity user {}
entity doc {
  relation owner @user
  permission view = owner
}`;
const call = async (path: string, body: unknown) => {
  const res = await exports.default.fetch(
    new Request(`http://worker.test${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const check = (doc: string, user: string) =>
  call("/v1/tenants/t1/permissions/check", {
    metadata: { depth: 10 },
    entity: { type: "doc", id: doc },
    permission: "view",
    subject: { type: "user", id: user, relation: "" },
  });

beforeAll(async () => {
  await emptyDatabase(env.DB);
});

describe("the shipped entry on D1 (wrangler.toml: PEMBA_DATABASE = d1:DB)", () => {
  it("migrates DB, writes, and answers checks; again after its background work", async () => {
    expect((await call("/v1/tenants/t1/schemas/write", { schema: SCHEMA })).status).toBe(200);
    const tuples = Array.from({ length: 50 }, (_, i) => ({
      entity: { type: "doc", id: String(i) },
      relation: "owner",
      subject: { type: "user", id: String(i), relation: "" },
    }));
    expect((await call("/v1/tenants/t1/data/write", { metadata: {}, tuples, attributes: [] })).status).toBe(
      200,
    );
    const migrations = await env.DB.prepare("SELECT count(*) AS n FROM d1_migrations").all();
    expect(Number(migrations.results[0]!.n)).toBeGreaterThan(0);
    for (let round = 0; round < 3; round++) {
      expect((await check("7", "7")).body.can).toBe("CHECK_RESULT_ALLOWED");
      expect((await check("7", "8")).body.can).toBe("CHECK_RESULT_DENIED");
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});
