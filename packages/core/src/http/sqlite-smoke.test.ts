/** A smoke subset of the HTTP API on real SQLite files (better-sqlite3 and libSQL, whose reads are async). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LibsqlStore } from "../store/drivers/libsql.ts";
import { SqliteStore } from "../store/drivers/sqlite.ts";
import type { Store } from "../store/store.ts";
import { startTestServer, TEST_SCHEMA, type TestServer, tuple } from "./testing/harness.ts";

const T = "/v1/tenants/t1";

const drivers: [string, (file: string) => Promise<Store>][] = [
  ["SqliteStore", async (file) => SqliteStore.open(file)],
  ["LibsqlStore", (file) => LibsqlStore.open(`file:${file}`)],
];

describe.each(drivers)("HTTP API on a SQLite file (%s)", (_name, open) => {
  let s: TestServer;
  let dir: string;
  let firstSnap: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "pemba-http-sqlite-"));
    s = await startTestServer({ store: await open(join(dir, "pemba.db")) });
    expect((await s.call(`${T}/schemas/write`, { schema: TEST_SCHEMA })).status).toBe(200);
    const w = await s.call(`${T}/data/write`, {
      metadata: {},
      tuples: [tuple("document:1", "owner", "user:1")],
      attributes: [{ entity: { type: "document", id: "1" }, attribute: "score", value: { integer: 3 } }],
    });
    firstSnap = (w.body as { snap_token: string }).snap_token;
    await s.call(`${T}/data/write`, { metadata: {}, tuples: [tuple("document:1", "owner", "user:2")] });
  });
  afterAll(async () => {
    await s.close();
    await s.store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads relationships and attributes, now and at an old snap token", async () => {
    const read = (snap: string) =>
      s.call(`${T}/data/relationships/read`, {
        metadata: { snap_token: snap },
        filter: { entity: { type: "document" } },
      });
    expect((await read(firstSnap)).body).toEqual({
      tuples: [tuple("document:1", "owner", "user:1")],
      continuous_token: "",
    });
    expect(((await read("")).body as { tuples: unknown[] }).tuples).toHaveLength(2);
    const attrs = await s.call(`${T}/data/attributes/read`, { metadata: {}, filter: {} });
    expect(attrs.body).toEqual({
      attributes: [
        {
          entity: { type: "document", id: "1" },
          attribute: "score",
          value: { "@type": "type.googleapis.com/base.v1.IntegerValue", data: 3 },
        },
      ],
      continuous_token: "",
    });
  });

  it("checks, and schema list/read", async () => {
    const check = await s.call(`${T}/permissions/check`, {
      metadata: { depth: 20 },
      entity: { type: "document", id: "1" },
      permission: "edit",
      subject: { type: "user", id: "2" },
    });
    expect(check.body).toEqual({
      can: "CHECK_RESULT_ALLOWED",
      metadata: { check_count: expect.any(Number) },
    });
    const list = await s.call(`${T}/schemas/list`, { page_size: 5 });
    expect((list.body as { schemas: unknown[] }).schemas).toHaveLength(1);
  });
});
