import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, TEST_SCHEMA, type TestServer } from "./testing/harness.ts";

const S = "/v1/tenants/t1/schemas";

describe("HTTP schema and tenancy endpoints", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  it("schemas/write answers an xid-like version; list shows it as head, newest first", async () => {
    const a = await s.call(`${S}/write`, { schema: "entity user {}" });
    expect(a.status).toBe(200);
    const v1 = (a.body as { schema_version: string }).schema_version;
    expect(v1).toMatch(/^[0-9a-v]{20}$/);
    const v2 = ((await s.call(`${S}/write`, { schema: TEST_SCHEMA })).body as { schema_version: string })
      .schema_version;
    expect(v2 > v1).toBe(true);
    const list = await s.call(`${S}/list`, { page_size: 10 });
    expect(list.body).toEqual({
      head: v2,
      schemas: [
        { version: v2, created_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC$/) },
        { version: v1, created_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC$/) },
      ],
      continuous_token: "",
    });
    const old = await s.call(`${S}/read`, { metadata: { schema_version: v1 } });
    expect(old.body).toEqual({
      schema: {
        entity_definitions: {
          user: { name: "user", relations: {}, permissions: {}, attributes: {}, references: {} },
        },
        rule_definitions: {},
        references: { user: "REFERENCE_ENTITY" },
      },
    });
  });

  it("schemas/write: a syntax error is HTTP 500, gRPC 13, with a line:column message", async () => {
    const r = await s.call(`${S}/write`, { schema: "entity user {}\nentity doc { relation owner @user " });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({
      code: 13,
      message: "2:38:expected token to be RCB, got EOF instead",
      details: [],
    });
    const ref = await s.call(`${S}/write`, {
      schema: "entity user {}\nentity doc {\n relation owner @usr\n}",
    });
    expect(ref).toMatchObject({
      status: 500,
      body: { code: 13, message: "3:19: relation reference not found in entity references", details: [] },
    });
  });

  it("schemas/read of the head", async () => {
    const r = await s.call(`${S}/read`, { metadata: {} });
    const schema = (r.body as { schema: Record<string, Record<string, unknown>> }).schema;
    expect(Object.keys(schema.entity_definitions).sort()).toEqual(["document", "organization", "user"]);
    expect(Object.keys(schema.rule_definitions)).toEqual(["high_score"]);
    expect(schema.references).toEqual({
      user: "REFERENCE_ENTITY",
      organization: "REFERENCE_ENTITY",
      document: "REFERENCE_ENTITY",
      high_score: "REFERENCE_RULE",
    });
  });

  it("schema endpoints of a tenant without schema: 404 ERROR_CODE_SCHEMA_NOT_FOUND", async () => {
    const r = await s.call("/v1/tenants/nobody/schemas/read", { metadata: {} });
    expect(r).toMatchObject({
      status: 404,
      body: { code: 5, message: "ERROR_CODE_SCHEMA_NOT_FOUND", details: [] },
    });
  });

  it("schemas/partial-write adds, updates and deletes statements as a new head version", async () => {
    const r = await s.call(
      `${S}/partial-write`,
      {
        metadata: { schema_version: "" },
        partials: {
          document: {
            write: ["relation editor @user"],
            update: ["permission edit = owner or editor"],
            delete: ["ranked"],
          },
        },
      },
      { method: "PATCH" },
    );
    expect(r.status).toBe(200);
    const version = (r.body as { schema_version: string }).schema_version;
    const list = await s.call(`${S}/list`, { page_size: 1 });
    expect((list.body as { head: string }).head).toBe(version);
    const read = await s.call(`${S}/read`, { metadata: {} });
    const document = (
      read.body as { schema: { entity_definitions: Record<string, Record<string, Record<string, unknown>>> } }
    ).schema.entity_definitions.document;
    expect(Object.keys(document.relations).sort()).toEqual(["editor", "org", "owner", "viewer"]);
    expect(Object.keys(document.permissions).sort()).toEqual(["edit", "view"]);
    const dup = await s.call(
      `${S}/partial-write`,
      { metadata: {}, partials: { document: { write: ["relation editor @user"] } } },
      { method: "PATCH" },
    );
    expect(dup.body).toEqual({ code: 3, message: "ERROR_CODE_ALREADY_EXIST", details: [] });
  });

  it("tenants: t1 exists; create, list, delete; deleting an unknown id is 404 ERROR_CODE_NOT_FOUND", async () => {
    const created = await s.call("/v1/tenants/create", { id: "acme", name: "Acme" });
    expect(created.body).toEqual({
      tenant: {
        id: "acme",
        name: "Acme",
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
      },
    });
    const list = await s.call("/v1/tenants/list", { page_size: 10 });
    const ids = (list.body as { tenants: { id: string }[] }).tenants.map((t) => t.id);
    expect(ids).toContain("t1");
    expect(ids).toContain("acme");
    expect((list.body as { continuous_token: string }).continuous_token).toBe("");
    const del = await s.call("/v1/tenants/acme", undefined, { method: "DELETE" });
    expect(del.body).toEqual({ tenant_id: "acme" });
    const again = await s.call("/v1/tenants/acme", undefined, { method: "DELETE" });
    expect(again).toMatchObject({
      status: 404,
      body: { code: 5, message: "ERROR_CODE_NOT_FOUND", details: [] },
    });
  });
});
