/**
 * The Worker on D1 in workerd: `wrangler d1 migrations apply --local` migrates a local D1 database from
 * drizzle-kit's SQLite migrations (wrangler.toml `migrations_dir`), then `wrangler dev` serves the repository's
 * wrangler.toml (PEMBA_DATABASE = "d1:DB") on it; the test writes a schema and data and checks over real HTTP.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeSnapTokenWithBookmark } from "@pemba/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runWrangler, startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";
import { allowed, checkBody, DATA, denied, SCHEMA } from "./fixtures.ts";

const appliedMigrations = async (state: string) => {
  const out = await runWrangler([
    "d1",
    "execute",
    "pemba",
    "--local",
    "--persist-to",
    state,
    "--json",
    "--command",
    "SELECT name FROM d1_migrations ORDER BY id",
  ]);
  const [result] = JSON.parse(out.slice(out.indexOf("["))) as { results: { name: string }[] }[];
  return result.results.map((r) => r.name);
};

describe("Worker on D1 (wrangler d1 migrations apply + wrangler dev, local D1)", () => {
  const state = mkdtempSync(join(tmpdir(), "pemba-d1-"));
  let w: WranglerDev;
  beforeAll(async () => {
    const applied = await runWrangler([
      "d1",
      "migrations",
      "apply",
      "pemba",
      "--local",
      "--persist-to",
      state,
    ]);
    expect(applied).toContain("0000_init.sql");
    expect(await appliedMigrations(state)).toEqual([
      "0000_init.sql",
      "0001_seed.sql",
      "0002_per_tenant_tx_ids.sql",
      "0003_subject_page_index.sql",
      "0004_expiry.sql",
      "0005_partial_expiry_index.sql",
      "0006_drop_subject_page_index.sql",
    ]);
    w = await startWranglerDev({}, 90_000, state);
  });
  afterAll(async () => {
    await w?.close();
    rmSync(state, { recursive: true, force: true });
  });

  it("writes a schema and data, then checks ALLOWED/DENIED over HTTP; write tokens carry a D1 bookmark", async () => {
    const schema = await w.call("/v1/tenants/t1/schemas/write", { schema: SCHEMA });
    expect(schema.status).toBe(200);
    const write = await w.call("/v1/tenants/t1/data/write", DATA);
    expect(write.status).toBe(200);
    const token = (write.body as { snap_token: string }).snap_token;
    const decoded = decodeSnapTokenWithBookmark(token);
    expect(decoded.snap).toBe(1);
    expect(decoded.bookmark).toMatch(/^[0-9a-f]{8}(-[0-9a-f]+)+$/);

    const check = (entity: string, permission: string, subject: string, snapToken = "") => {
      const body = checkBody(entity, permission, subject);
      return w.call("/v1/tenants/t1/permissions/check", {
        ...body,
        metadata: { ...body.metadata, snap_token: snapToken },
      });
    };
    expect(await check("document:1", "edit", "user:1", token)).toMatchObject({
      status: 200,
      body: allowed(2),
    });
    expect((await check("document:1", "edit", "user:2")).body).toEqual(allowed(3)); // via org.admin
    expect((await check("document:1", "view", "user:3", token)).body).toEqual(allowed(5)); // via org.member
    expect((await check("document:2", "view", "user:9", token)).body).toEqual(allowed(4)); // is_public
    expect(await check("document:1", "edit", "user:3", token)).toMatchObject({
      status: 200,
      body: denied(3),
    });
    expect((await check("document:1", "view", "user:9")).body).toEqual(denied(6));

    const revoke = await w.call("/v1/tenants/t1/relationships/delete", {
      filter: {
        entity: { type: "document", ids: ["1"] },
        relation: "owner",
        subject: { type: "user", ids: ["1"] },
      },
    });
    expect(revoke.status).toBe(200);
    const revoked = (revoke.body as { snap_token: string }).snap_token;
    expect(decodeSnapTokenWithBookmark(revoked).snap).toBe(2);
    expect((await check("document:1", "edit", "user:1", revoked)).body).toEqual(denied(3));
    // the token of the first write still reads its snapshot
    expect((await check("document:1", "edit", "user:1", token)).body).toEqual(allowed(2));
  });

  it("a write to a missing tenant is 404 ERROR_CODE_TENANT_NOT_FOUND and the Worker left wrangler's migrations as they were", async () => {
    const res = await w.call("/v1/tenants/nope/schemas/write", { schema: SCHEMA });
    expect(res).toMatchObject({
      status: 404,
      body: { code: 5, message: "ERROR_CODE_TENANT_NOT_FOUND", details: [] },
    });
    expect(await appliedMigrations(state)).toEqual([
      "0000_init.sql",
      "0001_seed.sql",
      "0002_per_tenant_tx_ids.sql",
      "0003_subject_page_index.sql",
      "0004_expiry.sql",
      "0005_partial_expiry_index.sql",
      "0006_drop_subject_page_index.sql",
    ]);
  });
});
