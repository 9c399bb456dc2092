import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, TEST_SCHEMA, type TestServer, tuple } from "./testing/harness.ts";

const P = "/v1/tenants/t1/permissions";
const doc = (id: string) => ({ type: "document", id });
const user = (id: string) => ({ type: "user", id, relation: "" });
const allowed = { can: "CHECK_RESULT_ALLOWED", metadata: { check_count: expect.any(Number) } };
const denied = { can: "CHECK_RESULT_DENIED", metadata: { check_count: expect.any(Number) } };

describe("HTTP permission endpoints", () => {
  let s: TestServer;
  let firstVersion: string;
  let snapBeforeViewer: string;
  beforeAll(async () => {
    s = await startTestServer();
    firstVersion = (
      (await s.call("/v1/tenants/t1/schemas/write", { schema: TEST_SCHEMA })).body as {
        schema_version: string;
      }
    ).schema_version;
    const w = await s.call("/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [
        tuple("document:1", "owner", "user:1"),
        tuple("document:1", "org", "organization:1"),
        tuple("organization:1", "admin", "user:2"),
        tuple("organization:1", "member", "user:4"),
      ],
      attributes: [
        { entity: doc("3"), attribute: "is_public", value: { boolean: true } },
        { entity: doc("1"), attribute: "score", value: { integer: 10 } },
      ],
    });
    snapBeforeViewer = (w.body as { snap_token: string }).snap_token;
    await s.call("/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [tuple("document:2", "viewer", "organization:1#member")],
    });
  });
  afterAll(() => s.close());

  const check = (
    entity: string,
    permission: string,
    subject: string,
    extra: Record<string, unknown> = {},
  ) => {
    const [et, eid] = entity.split(":");
    const [st, sid] = subject.split(":");
    return s.call(`${P}/check`, {
      metadata: { depth: 20, ...((extra.metadata as object) ?? {}) },
      entity: { type: et, id: eid },
      permission,
      subject: { type: st, id: sid, relation: "" },
      ...(extra.context ? { context: extra.context } : {}),
    });
  };

  it("check: owner, org admin via tuple-to-userset, userset viewer, public attribute, denied", async () => {
    expect(await check("document:1", "view", "user:1")).toMatchObject({ status: 200, body: allowed });
    expect((await check("document:1", "edit", "user:2")).body).toEqual(allowed);
    expect((await check("document:2", "view", "user:4")).body).toEqual(allowed);
    expect((await check("document:3", "view", "user:99")).body).toEqual(allowed);
    expect((await check("document:1", "edit", "user:4")).body).toEqual(denied);
  });

  it("check at an old snap token does not see later writes", async () => {
    const old = await check("document:2", "view", "user:4", { metadata: { snap_token: snapBeforeViewer } });
    expect(old.body).toEqual(denied);
  });

  it("check with contextual tuples and rule data", async () => {
    const ctx = await check("document:9", "view", "user:5", {
      context: { tuples: [tuple("document:9", "owner", "user:5")], attributes: [], data: {} },
    });
    expect(ctx.body).toEqual(allowed);
    expect((await check("document:1", "ranked", "user:1", { context: { data: { min: 5 } } })).body).toEqual(
      allowed,
    );
    expect((await check("document:1", "ranked", "user:1", { context: { data: { min: 50 } } })).body).toEqual(
      denied,
    );
    const ctxAttr = await check("document:8", "view", "user:5", {
      context: { attributes: [{ entity: doc("8"), attribute: "is_public", value: { boolean: true } }] },
    });
    expect(ctxAttr.body).toEqual(allowed);
  });

  it("metadata.depth and page_size as JSON strings are accepted (proto3 JSON), on every permission endpoint", async () => {
    const asText = await check("document:1", "view", "user:1", { metadata: { depth: "10" } });
    expect(asText).toMatchObject({ status: 200, body: allowed });
    const bulk = await s.call(`${P}/bulk-check`, {
      metadata: { depth: "20" },
      items: [{ entity: doc("1"), permission: "edit", subject: user("1") }],
    });
    expect(bulk).toMatchObject({ status: 200, body: { results: [allowed] } });
    const le = await s.call(`${P}/lookup-entity`, {
      metadata: { depth: "20" },
      entity_type: "document",
      permission: "edit",
      subject: user("2"),
      page_size: "5",
    });
    expect(le).toMatchObject({ status: 200, body: { entity_ids: ["1"], continuous_token: "" } });
    const caused =
      "invalid PermissionCheckRequest.Metadata: embedded message failed validation | caused by: ";
    const shallow = await check("document:1", "view", "user:1", { metadata: { depth: "2" } });
    expect(shallow).toMatchObject({
      status: 400,
      body: {
        code: 3,
        message: `${caused}invalid PermissionCheckRequestMetadata.Depth: value must be greater than or equal to 3`,
      },
    });
    for (const depth of ["ten", "", " 10", "0x10"]) {
      const bad = await check("document:1", "view", "user:1", { metadata: { depth } });
      expect(bad).toMatchObject({
        status: 400,
        body: {
          code: 3,
          message: `${caused}invalid PermissionCheckRequestMetadata.Depth: value must be a number`,
        },
      });
    }
  });

  it("check and bulk-check accept and refuse the same bodies (one wire schema)", async () => {
    const item = { entity: doc("1"), permission: "view", subject: user("1") };
    const both = async (metadata: Record<string, unknown>, override: Record<string, unknown> = {}) => {
      const one = await s.call(`${P}/check`, { metadata, ...item, ...override });
      const bulk = await s.call(`${P}/bulk-check`, { metadata, items: [{ ...item, ...override }] });
      return { one, bulk };
    };
    // proto3 JSON: null means the default value
    const nulls = await both(
      { depth: 20, schema_version: null, snap_token: null },
      { context: null, arguments: null },
    );
    expect(nulls.one).toMatchObject({ status: 200, body: allowed });
    expect(nulls.bulk).toMatchObject({ status: 200, body: { results: [allowed] } });
    const nullRelation = await both({ depth: 20 }, { subject: { type: "user", id: "1", relation: null } });
    expect(nullRelation.one).toMatchObject({ status: 200, body: allowed });
    expect(nullRelation.bulk).toMatchObject({ status: 200, body: { results: [allowed] } });
    // depth is an int32
    const big = await both({ depth: 2147483648 });
    expect(big.one).toEqual({
      status: 400,
      body: {
        code: 3,
        message:
          "invalid PermissionCheckRequest.Metadata: embedded message failed validation | caused by: invalid PermissionCheckRequestMetadata.Depth: value must be less than or equal to 2147483647",
        details: [],
      },
      headers: expect.anything(),
    });
    expect(big.bulk.status).toBe(400);
    expect((big.bulk.body as { message: string }).message).toBe(
      "invalid PermissionBulkCheckRequest.Metadata: embedded message failed validation | caused by: invalid PermissionCheckRequestMetadata.Depth: value must be less than or equal to 2147483647",
    );
    expect((await both({ depth: 2147483647 })).one).toMatchObject({ status: 200, body: allowed });
    // a raw U+007F in a type name does not match the name pattern
    const del = await both({ depth: 20 }, { entity: { type: "document\u007f", id: "1" } });
    expect(del.one).toMatchObject({
      status: 400,
      body: {
        code: 3,
        message:
          'invalid PermissionCheckRequest.Entity: embedded message failed validation | caused by: invalid Entity.Type: value does not match regex pattern "^[a-zA-Z_]{1,64}$"',
      },
    });
    expect(del.bulk).toMatchObject({
      status: 400,
      body: {
        code: 3,
        message:
          'invalid PermissionBulkCheckRequest.Items[0]: embedded message failed validation | caused by: invalid PermissionBulkCheckRequestItem.Entity: embedded message failed validation | caused by: invalid Entity.Type: value does not match regex pattern "^[a-zA-Z_]{1,64}$"',
      },
    });
  });

  it("check errors: unknown permission / entity type / schema version -> 404 ERROR_CODE_SCHEMA_NOT_FOUND", async () => {
    const notFound = { code: 5, message: "ERROR_CODE_SCHEMA_NOT_FOUND", details: [] };
    const perm = await check("document:1", "nope", "user:1");
    expect(perm.status).toBe(404);
    expect(perm.body).toEqual(notFound);
    expect((await check("folder:1", "view", "user:1")).body).toEqual(notFound);
    expect(
      (await check("document:1", "view", "user:1", { metadata: { schema_version: "zzzz" } })).body,
    ).toEqual(notFound);
    const noSchema = await s.call("/v1/tenants/empty-tenant/permissions/check", {
      metadata: { depth: 20 },
      entity: doc("1"),
      permission: "view",
      subject: user("1"),
    });
    expect(noSchema).toMatchObject({ status: 404, body: notFound });
  });

  it("check of a rule name runs the rule without arguments, as Permify: 500 no such attribute(s)", async () => {
    const r = await check("document:1", "high_score", "user:1", { context: { data: { min: 5 } } });
    expect(r).toMatchObject({
      status: 500,
      body: { code: 13, message: "failed to evaluate expression: no such attribute(s): score", details: [] },
    });
  });

  it("check errors: depth exhausted -> 400 ERROR_CODE_DEPTH_NOT_ENOUGH; rule error -> 500 code 13", async () => {
    await s.call("/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [
        tuple("organization:11", "member", "organization:12#member"),
        tuple("organization:12", "member", "organization:13#member"),
        tuple("organization:13", "member", "organization:14#member"),
        tuple("organization:14", "member", "organization:15#member"),
        tuple("organization:15", "member", "user:7"),
      ],
    });
    const ok = await s.call(`${P}/check`, {
      metadata: { depth: 20 },
      entity: { type: "organization", id: "11" },
      permission: "member",
      subject: user("7"),
    });
    expect(ok.body).toEqual(allowed);
    const shallow = await s.call(`${P}/check`, {
      metadata: { depth: 3 },
      entity: { type: "organization", id: "11" },
      permission: "member",
      subject: user("7"),
    });
    expect(shallow).toMatchObject({
      status: 400,
      body: { code: 3, message: "ERROR_CODE_DEPTH_NOT_ENOUGH", details: [] },
    });
    const rule = await check("document:1", "ranked", "user:1");
    expect(rule).toMatchObject({
      status: 500,
      body: { code: 13, message: "failed to evaluate expression: no such key: min", details: [] },
    });
  });

  it("check on an older schema version uses that version", async () => {
    await s.call("/v1/tenants/t1/schemas/write", {
      schema: TEST_SCHEMA.replace("permission edit = owner or org.admin", "permission edit = org.admin"),
    });
    expect((await check("document:1", "edit", "user:1")).body).toEqual(denied);
    expect(
      (await check("document:1", "edit", "user:1", { metadata: { schema_version: firstVersion } })).body,
    ).toEqual(allowed);
    await s.call("/v1/tenants/t1/schemas/write", { schema: TEST_SCHEMA });
  });

  it("bulk check: results in order; engine errors per item are DENIED", async () => {
    const r = await s.call(`${P}/bulk-check`, {
      metadata: { depth: 20 },
      items: [
        { entity: doc("1"), permission: "view", subject: user("1") },
        { entity: doc("1"), permission: "edit", subject: user("4") },
        { entity: doc("1"), permission: "nope", subject: user("1") },
        { entity: doc("2"), permission: "view", subject: user("4") },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ results: [allowed, denied, denied, allowed] });
  });

  it("bulk check: an invalid item fails the whole request with its index", async () => {
    const r = await s.call(`${P}/bulk-check`, {
      metadata: { depth: 20 },
      items: [
        { entity: doc("1"), permission: "view", subject: user("1") },
        { entity: doc("1"), permission: "view2", subject: user("1") },
      ],
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      code: 3,
      message:
        'invalid PermissionBulkCheckRequest.Items[1]: embedded message failed validation | caused by: invalid PermissionBulkCheckRequestItem.Permission: value does not match regex pattern "^[a-zA-Z_]{1,64}$"',
      details: [],
    });
  });

  it("expand: the owner relation as a leaf of subjects", async () => {
    const r = await s.call(`${P}/expand`, { metadata: {}, entity: doc("1"), permission: "owner" });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      tree: {
        entity: doc("1"),
        permission: "owner",
        arguments: [],
        leaf: { subjects: { subjects: [user("1")] } },
      },
    });
    const edit = await s.call(`${P}/expand`, { metadata: {}, entity: doc("1"), permission: "edit" });
    const tree = (edit.body as { tree: { expand: { operation: string; children: unknown[] } } }).tree;
    expect(tree.expand.operation).toBe("OPERATION_UNION");
    expect(tree.expand.children).toHaveLength(2);
  });

  it("lookup-entity, lookup-entity-stream and lookup-subject", async () => {
    const le = await s.call(`${P}/lookup-entity`, {
      metadata: { depth: 20 },
      entity_type: "document",
      permission: "view",
      subject: user("4"),
    });
    expect(le.status).toBe(200);
    expect(le.body).toEqual({ entity_ids: ["2", "3"], continuous_token: "" });
    const stream = await s.call(`${P}/lookup-entity-stream`, {
      metadata: { depth: 20 },
      entity_type: "document",
      permission: "edit",
      subject: user("2"),
    });
    expect(stream.status).toBe(200);
    expect(stream.body).toEqual({ result: { entity_id: "1", continuous_token: "" } });
    const ls = await s.call(`${P}/lookup-subject`, {
      metadata: { depth: 20 },
      entity: doc("1"),
      permission: "edit",
      subject_reference: { type: "user", relation: "" },
    });
    expect(ls.body).toEqual({ subject_ids: ["1", "2"], continuous_token: "" });
  });

  it("lookup-entity for a type without the permission, an unknown type, permission or a rule name: 200, no ids (as Permify)", async () => {
    const cases = [
      { entity_type: "user", permission: "view" },
      { entity_type: "folder", permission: "view" },
      { entity_type: "document", permission: "nope" },
      { entity_type: "document", permission: "high_score" },
    ];
    for (const c of cases) {
      const body = { metadata: { depth: 20 }, ...c, subject: user("1") };
      const le = await s.call(`${P}/lookup-entity`, body);
      expect(le).toMatchObject({ status: 200, body: { entity_ids: [], continuous_token: "" } });
      const stream = await s.call(`${P}/lookup-entity-stream`, body);
      expect(stream).toMatchObject({ status: 200, body: "" });
    }
  });

  it("lookup-entity-stream errors are wrapped like grpc-gateway stream errors", async () => {
    const r = await s.call(`${P}/lookup-entity-stream`, {
      metadata: { depth: 1 },
      entity_type: "document",
      permission: "edit",
      subject: user("2"),
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      error: {
        code: 3,
        message:
          "invalid PermissionLookupEntityRequest.Metadata: embedded message failed validation | caused by: invalid PermissionLookupEntityRequestMetadata.Depth: value must be greater than or equal to 3",
        details: [],
      },
    });
  });

  it("subject-permission: every permission and relation, or only permissions", async () => {
    const all = await s.call(`${P}/subject-permission`, {
      metadata: { depth: 20 },
      entity: { type: "organization", id: "1" },
      subject: user("2"),
    });
    expect(all.body).toEqual({
      results: { admin: "CHECK_RESULT_ALLOWED", member: "CHECK_RESULT_DENIED", view: "CHECK_RESULT_ALLOWED" },
    });
    const only = await s.call(`${P}/subject-permission`, {
      metadata: { depth: 20, only_permission: true },
      entity: { type: "organization", id: "1" },
      subject: user("4"),
    });
    expect(only.body).toEqual({ results: { view: "CHECK_RESULT_ALLOWED" } });
  });
  it("answers better than Permify: a check of a non-boolean attribute is 404 ATTRIBUTE_TYPE_MISMATCH; a garbage continuous token is 400 INVALID_CONTINUOUS_TOKEN", async () => {
    const score = await s.call(`${P}/check`, {
      metadata: { depth: 20 },
      entity: doc("1"),
      permission: "score",
      subject: user("1"),
    });
    expect(score.status).toBe(404);
    expect(score.body).toEqual({ code: 5, message: "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH", details: [] });
    const badToken = { code: 3, message: "ERROR_CODE_INVALID_CONTINUOUS_TOKEN", details: [] };
    const entities = await s.call(`${P}/lookup-entity`, {
      metadata: { depth: 20 },
      entity_type: "document",
      permission: "view",
      subject: user("1"),
      page_size: 1,
      continuous_token: "%%not base64%%",
    });
    expect(entities.status).toBe(400);
    expect(entities.body).toEqual(badToken);
    const subjects = await s.call(`${P}/lookup-subject`, {
      metadata: { depth: 20 },
      entity: doc("1"),
      permission: "view",
      subject_reference: { type: "user", relation: "" },
      page_size: 1,
      continuous_token: "%%not base64%%",
    });
    expect(subjects.status).toBe(400);
    expect(subjects.body).toEqual(badToken);
  });
});

describe("HTTP: work limits on one request", () => {
  let s: TestServer;
  const T = "/v1/tenants/limits";
  beforeAll(async () => {
    s = await startTestServer();
    expect((await s.call("/v1/tenants/create", { id: "limits", name: "limits" })).status).toBe(200);
    // p_a = a or b, p_b = p_a and p_a, ... (the tree doubles per level), and a rule that nests loops
    const names = Array.from({ length: 26 }, (_, i) => `p_${String.fromCharCode(97 + i)}`);
    const schema = [
      "entity user {}",
      "entity doc {",
      "  relation a @user",
      "  relation b @user",
      "  attribute on boolean",
      `  permission ${names[0]} = a or b`,
      ...names.slice(1).map((n, i) => `  permission ${n} = ${names[i]} and ${names[i]}`),
      "  permission nested = loops(on)",
      "}",
      "rule loops(on boolean) {",
      "  context.data.l.all(x, context.data.l.all(y, context.data.l.all(z, x + y + z >= 0))) || on",
      "}",
    ].join("\n");
    expect((await s.call(`${T}/schemas/write`, { schema })).status).toBe(200);
    await s.call(`${T}/data/write`, { metadata: {}, tuples: [tuple("doc:1", "a", "user:1")] });
  });
  afterAll(() => s.close());

  it("expand of an exponential tree: 429 RESOURCE_EXHAUSTED", async () => {
    const r = await s.call(`${T}/permissions/expand`, {
      metadata: {},
      entity: { type: "doc", id: "1" },
      permission: "p_z",
    });
    expect(r.status).toBe(429);
    expect(r.body).toEqual({ code: 8, message: "expand tree exceeds 100000 nodes", details: [] });
  });

  it("a rule over its CEL cost limit: 429 RESOURCE_EXHAUSTED", async () => {
    const r = await s.call(`${T}/permissions/check`, {
      metadata: { depth: 20 },
      entity: { type: "doc", id: "1" },
      permission: "nested",
      subject: { type: "user", id: "1", relation: "" },
      context: { tuples: [], attributes: [], data: { l: Array.from({ length: 200 }, (_, i) => i) } },
    });
    expect(r.status).toBe(429);
    expect(r.body).toEqual({
      code: 8,
      message: "failed to evaluate expression: cost limit exceeded (100000)",
      details: [],
    });
  });
});
