/** POST /v1/tenants/{t}/schemas/diff (a Pemba extension) and safe schema writes, over real HTTP. */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./testing/harness.ts";

const S = "/v1/tenants/t1/schemas";
const OLD = `entity user {}
entity doc {
  relation owner @user
  relation editor @user
  attribute level integer
  permission edit = owner or editor
}`;
const NEW = `entity user {}
entity doc {
  relation owner @user
  attribute level string
  permission edit = owner
}`;

const user = (id: string) => ({ type: "user", id });

async function seeded(s: TestServer): Promise<string> {
  const written = await s.call(`${S}/write`, { schema: OLD });
  const version = (written.body as { schema_version: string }).schema_version;
  const data = await s.call("/v1/tenants/t1/data/write", {
    metadata: { schema_version: version },
    tuples: [
      { entity: { type: "doc", id: "1" }, relation: "owner", subject: user("alice") },
      { entity: { type: "doc", id: "1" }, relation: "editor", subject: user("bob") },
      { entity: { type: "doc", id: "2" }, relation: "editor", subject: user("bob") },
    ],
    attributes: [{ entity: { type: "doc", id: "1" }, attribute: "level", value: { integer: 2 } }],
  });
  expect(data.status).toBe(200);
  return version;
}

describe("POST /v1/tenants/{tenant_id}/schemas/diff", () => {
  let s: TestServer | undefined;
  afterEach(() => s?.close());

  it("answers the removals with their rows, type changes, flipped pairs with examples; writes nothing", async () => {
    s = await startTestServer();
    const version = await seeded(s);
    const r = await s.call(`${S}/diff`, { schema: NEW });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      base_version: version,
      snap_token: expect.any(String),
      measured: true,
      orphaned_rows: 3,
      sample: { size: 5000, seed: 1, pair_budget: 50000, limited_by_budget: false },
      removed: [{ kind: "RELATION", entity: "doc", name: "editor", tuples: 2, attributes: 0 }],
      added: [],
      attribute_type_changes: [
        {
          entity: "doc",
          attribute: "level",
          from: "ATTRIBUTE_TYPE_INTEGER",
          to: "ATTRIBUTE_TYPE_STRING",
          values: 1,
          mismatched: 1,
        },
      ],
      permissions: [
        {
          entity: "doc",
          permission: "edit",
          subject_types: ["user"],
          pairs: 4,
          checked: 4,
          sampled: false,
          allowed_to_denied: 2,
          denied_to_allowed: 0,
          examples: [
            {
              entity: { type: "doc", id: "1" },
              subject: { ...user("bob"), relation: "" },
              from: "CHECK_RESULT_ALLOWED",
              to: "CHECK_RESULT_DENIED",
            },
            {
              entity: { type: "doc", id: "2" },
              subject: { ...user("bob"), relation: "" },
              from: "CHECK_RESULT_ALLOWED",
              to: "CHECK_RESULT_DENIED",
            },
          ],
        },
      ],
      unchanged_permissions: 0,
    });
    const list = await s.call(`${S}/list`, { page_size: 10 });
    expect(list.body).toMatchObject({ head: version, schemas: [{ version }] });
  });

  it("a base version or base text, a sample size; bad input gets Permify's error codes", async () => {
    s = await startTestServer();
    const version = await seeded(s);
    const byVersion = await s.call(`${S}/diff`, {
      metadata: { schema_version: version },
      schema: NEW,
      sample_size: 2,
    });
    expect(byVersion.body).toMatchObject({
      sample: { size: 2, seed: 1, pair_budget: 50000, limited_by_budget: false },
      permissions: [{ pairs: 4, checked: 2, sampled: true }],
    });
    const byText = await s.call(`${S}/diff`, { base_schema: NEW, schema: NEW });
    expect(byText.body).toMatchObject({ base_version: "", removed: [], permissions: [], orphaned_rows: 0 });

    const empty = await s.call(`${S}/diff`, { base_schema: OLD });
    expect(empty).toMatchObject({
      status: 400,
      body: { code: 3, message: "invalid SchemaDiffRequest.Schema: value length must be at least 1 bytes" },
    });
    const parse = await s.call(`${S}/diff`, { schema: "entity doc {" });
    expect(parse).toMatchObject({
      status: 500,
      body: { code: 13, message: expect.stringMatching(/^1:\d+:/) },
    });
    const tooMany = await s.call(`${S}/diff`, { schema: NEW, sample_size: 100_001 });
    expect(tooMany).toMatchObject({
      status: 400,
      body: {
        code: 3,
        message: "invalid SchemaDiffRequest.SampleSize: value must be less than or equal to 100000",
      },
    });
    const unknown = await s.call(`${S}/diff`, {
      metadata: { schema_version: "cn3u0b9t3kdt9bk4q3ag" },
      schema: NEW,
    });
    expect(unknown).toMatchObject({ status: 404, body: { message: "ERROR_CODE_SCHEMA_NOT_FOUND" } });
    const token = await s.call(`${S}/diff`, { metadata: { snap_token: "garbage" }, schema: NEW });
    expect(token).toMatchObject({ status: 400, body: { message: "ERROR_CODE_INVALID_SNAP_TOKEN" } });
    const none = await s.call("/v1/tenants/t2/schemas/diff", { schema: NEW });
    expect(none).toMatchObject({ status: 404, body: { message: "ERROR_CODE_SCHEMA_NOT_FOUND" } });
  });

  it("admits the schema size of a write: 64 KiB of text each, a body of two schema bodies at most", async () => {
    s = await startTestServer();
    await seeded(s);
    const big = `entity user {}\n${"// padding comment line\n".repeat(2800)}`;
    expect(new TextEncoder().encode(big).length).toBeGreaterThan(65_536);
    expect(await s.call(`${S}/diff`, { schema: big })).toMatchObject({
      status: 400,
      body: {
        code: 3,
        message: "invalid SchemaDiffRequest.Schema: value length must be at most 65536 bytes",
      },
    });
    expect(await s.call(`${S}/diff`, { base_schema: big, schema: NEW })).toMatchObject({
      status: 400,
      body: {
        code: 3,
        message: "invalid SchemaDiffRequest.BaseSchema: value length must be at most 65536 bytes",
      },
    });
    const huge = await s.call(`${S}/diff`, { schema: `entity user {}\n//${"x".repeat(1024 * 1024)}` });
    expect(huge).toMatchObject({ status: 413, body: { message: "ERROR_CODE_REQUEST_TOO_LARGE" } });
  });

  it("safe schema writes: 400 ERROR_CODE_VALIDATION naming the orphans, head unchanged; the default writes", async () => {
    s = await startTestServer({ serviceOptions: { schemaWrites: "safe" } });
    const version = await seeded(s);
    const refused = await s.call(`${S}/write`, { schema: NEW });
    expect(refused).toMatchObject({
      status: 400,
      body: {
        code: 3,
        message:
          "schema write would orphan live rows: relation doc#editor (2 tuples); attribute doc#level " +
          "ATTRIBUTE_TYPE_INTEGER -> ATTRIBUTE_TYPE_STRING (1 stored value no longer fits); delete or migrate " +
          'them first (schema writes are "safe")',
        details: [],
      },
    });
    expect((await s.call(`${S}/list`, { page_size: 10 })).body).toMatchObject({ head: version });
    await s.close();

    s = await startTestServer();
    await seeded(s);
    expect((await s.call(`${S}/write`, { schema: NEW })).status).toBe(200);
  });
});
