/**
 * D1 stores at most 2,000,000 bytes per string or BLOB value; the HTTP layer accepts bodies of up to 4 MiB, so an
 * attribute value, a write's rows (sent to D1 as one JSON value), a schema or a bundle can be over it. Such a request
 * is refused before anything is sent, as ERROR_CODE_VALIDATION (400) naming the limit, and nothing is written.
 */
import { env } from "cloudflare:test";
import { createApp, D1Store, PembaService } from "@pemba/core";
import { beforeEach, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";

const SCHEMA = `entity user {}
entity doc {
  relation viewer @user
  attribute note string
}`;
const OVER = 2_100_000;

beforeEach(async () => {
  await emptyDatabase(env.DB);
});

async function setUp() {
  const store = await D1Store.open(env.DB);
  const app = createApp({ service: new PembaService(store) });
  const call = async (path: string, body: unknown) => {
    const res = await app.fetch(
      new Request(`http://pemba.test/v1/tenants/t1${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  expect((await call("/schemas/write", { schema: SCHEMA })).status).toBe(200);
  return { call };
}

const note = (id: string, text: string) => ({
  entity: { type: "doc", id },
  attribute: "note",
  value: { "@type": "type.googleapis.com/base.v1.StringValue", data: text },
});
const viewer = (id: string) => ({
  entity: { type: "doc", id },
  relation: "viewer",
  subject: { type: "user", id: "u", relation: "" },
});
const validation = (message: string) => ({ code: 3, message: expect.stringContaining(message), details: [] });

describe("D1's 2 MB per value, checked before sending", () => {
  it("a data write whose attribute value (and so its rows) is over 2 MB: 400 ERROR_CODE_VALIDATION, nothing written", async () => {
    const { call } = await setUp();
    const w = await call("/data/write", {
      metadata: {},
      tuples: [viewer("1")],
      attributes: [note("1", "n".repeat(OVER))],
    });
    expect(w.status).toBe(400);
    expect(w.body).toEqual(
      validation("over D1's limit of 2000000 bytes per value; a write's tuples and attributes travel"),
    );
    expect(w.body.message).toMatch(/^value too large for D1: 21000\d\d bytes/);
    const tuples = await call("/data/relationships/read", {
      metadata: {},
      filter: { entity: { type: "doc" } },
    });
    expect(tuples.body.tuples).toEqual([]);
    const attributes = await call("/data/attributes/read", {
      metadata: {},
      filter: { entity: { type: "doc" } },
    });
    expect(attributes.body.attributes).toEqual([]);
  });

  it("an attribute value just under the limit is written and read back whole", async () => {
    const { call } = await setUp();
    const text = "u".repeat(1_900_000);
    expect(
      (await call("/data/write", { metadata: {}, tuples: [], attributes: [note("2", text)] })).status,
    ).toBe(200);
    const read = await call("/data/attributes/read", { metadata: {}, filter: { entity: { type: "doc" } } });
    expect(read.body.attributes).toEqual([note("2", text)]);
  });

  it("a schema over 2 MB: refused by the store with ERROR_CODE_VALIDATION; over HTTP already by the size limits", async () => {
    const { call } = await setUp();
    const before = await call("/schemas/list", { page_size: 10 });
    const big = `${SCHEMA}\n// ${"c".repeat(OVER)}\n`;
    // the schema write limit (64 KiB) refuses its body (413) before it is read
    const w = await call("/schemas/write", { schema: big });
    expect(w).toEqual({
      status: 413,
      body: { code: 8, message: "ERROR_CODE_REQUEST_TOO_LARGE", details: [] },
    });
    expect(await call("/schemas/list", { page_size: 10 })).toEqual(before);
    // the store's own check, for a caller without the HTTP layer
    const store = await D1Store.open(env.DB);
    await expect(store.writeSchema("t1", "v-big", big)).rejects.toMatchObject({
      code: "ERROR_CODE_VALIDATION",
      message: expect.stringContaining("the schema is stored as one value"),
    });
    expect(await call("/schemas/list", { page_size: 10 })).toEqual(before);
  });

  it("a bundle over 2 MB: 400 ERROR_CODE_VALIDATION, not stored", async () => {
    const { call } = await setUp();
    const bundle = {
      name: "big",
      arguments: ["docID"],
      operations: [
        {
          relationships_write: [`doc:{{.docID}}#viewer@user:${"b".repeat(OVER)}`],
          relationships_delete: [],
          attributes_write: [],
          attributes_delete: [],
        },
      ],
    };
    const w = await call("/bundle/write", { bundles: [bundle] });
    expect(w.status).toBe(400);
    expect(w.body).toEqual(validation("each bundle is stored as one value"));
    const read = await call("/bundle/read", { name: "big" });
    expect(read.status).toBe(404);
  });
});
