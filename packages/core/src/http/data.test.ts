import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openWatch, startTestServer, TEST_SCHEMA, type TestServer, tuple } from "./testing/harness.ts";

const T = "/v1/tenants/t1";
const bool = (data: boolean) => ({ "@type": "type.googleapis.com/base.v1.BooleanValue", data });
const int = (data: number) => ({ "@type": "type.googleapis.com/base.v1.IntegerValue", data });

describe("HTTP data endpoints", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    const w = await s.call(`${T}/schemas/write`, { schema: TEST_SCHEMA });
    expect(w.status).toBe(200);
  });
  afterAll(() => s.close());

  it("data/write accepts the Any form and the short form, answers a snap token", async () => {
    const r = await s.call(`${T}/data/write`, {
      metadata: { schema_version: "" },
      tuples: [tuple("document:1", "owner", "user:1"), tuple("document:1", "owner", "user:1")],
      attributes: [
        { entity: { type: "document", id: "1" }, attribute: "is_public", value: bool(false) },
        { entity: { type: "document", id: "2" }, attribute: "is_public", value: { boolean: true } },
        { entity: { type: "document", id: "2" }, attribute: "score", value: { integer: 7 } },
      ],
    });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body as object)).toEqual(["snap_token"]);
    expect((r.body as { snap_token: string }).snap_token).toMatch(/^[A-Za-z0-9+/]{11}=$/);
  });

  it("relationships/read answers every field, de-duplicated, with paging", async () => {
    await s.call(`${T}/relationships/write`, {
      metadata: {},
      tuples: [
        tuple("document:1", "viewer", "organization:1#member"),
        tuple("organization:1", "member", "user:3"),
      ],
    });
    const all = await s.call(`${T}/data/relationships/read`, {
      metadata: { snap_token: "" },
      filter: { entity: { type: "document", ids: ["1"] } },
    });
    expect(all.status).toBe(200);
    const body = all.body as { tuples: unknown[]; continuous_token: string };
    expect(body.continuous_token).toBe("");
    expect(body.tuples).toHaveLength(2);
    expect(body.tuples).toContainEqual({
      entity: { type: "document", id: "1" },
      relation: "owner",
      subject: { type: "user", id: "1", relation: "" },
    });
    expect(body.tuples).toContainEqual({
      entity: { type: "document", id: "1" },
      relation: "viewer",
      subject: { type: "organization", id: "1", relation: "member" },
    });
    const first = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["1"] } },
      page_size: 1,
    });
    const p1 = first.body as { tuples: unknown[]; continuous_token: string };
    expect(p1.tuples).toHaveLength(1);
    expect(p1.continuous_token).not.toBe("");
    const second = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["1"] } },
      page_size: 1,
      continuous_token: p1.continuous_token,
    });
    const p2 = second.body as { tuples: unknown[]; continuous_token: string };
    expect(p2.tuples).toHaveLength(1);
    expect([...p1.tuples, ...p2.tuples]).toEqual(expect.arrayContaining(body.tuples));
  });

  it("attributes/read answers values in Permify's Any form", async () => {
    const r = await s.call(`${T}/data/attributes/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["2"] }, attributes: [] },
    });
    expect(r.status).toBe(200);
    const body = r.body as { attributes: unknown[]; continuous_token: string };
    expect(body.continuous_token).toBe("");
    expect(body.attributes).toHaveLength(2);
    expect(body.attributes).toContainEqual({
      entity: { type: "document", id: "2" },
      attribute: "is_public",
      value: bool(true),
    });
    expect(body.attributes).toContainEqual({
      entity: { type: "document", id: "2" },
      attribute: "score",
      value: int(7),
    });
  });

  it("a read at an old snap token sees the old data", async () => {
    const w1 = await s.call(`${T}/data/write`, {
      metadata: {},
      tuples: [tuple("document:5", "owner", "user:1")],
    });
    const old = (w1.body as { snap_token: string }).snap_token;
    await s.call(`${T}/data/write`, { metadata: {}, tuples: [tuple("document:5", "owner", "user:2")] });
    await s.call(`${T}/data/delete`, {
      tuple_filter: {
        entity: { type: "document", ids: ["5"] },
        relation: "owner",
        subject: { type: "user", ids: ["1"] },
      },
      attribute_filter: {},
    });
    const read = (snap: string) =>
      s.call(`${T}/data/relationships/read`, {
        metadata: { snap_token: snap },
        filter: { entity: { type: "document", ids: ["5"] } },
      });
    expect(((await read(old)).body as { tuples: unknown[] }).tuples).toEqual([
      tuple("document:5", "owner", "user:1"),
    ]);
    expect(((await read("")).body as { tuples: unknown[] }).tuples).toEqual([
      tuple("document:5", "owner", "user:2"),
    ]);
  });

  it("writes are validated before anything is written", async () => {
    const before = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["7"] } },
    });
    expect(before.body).toEqual({ tuples: [], continuous_token: "" });
    const bad = await s.call(`${T}/data/write`, {
      metadata: {},
      tuples: [tuple("document:7", "owner", "user:1"), tuple("document:7", "owner", "organization:1")],
    });
    expect(bad.status).toBe(404);
    expect(bad.body).toEqual({ code: 5, message: "ERROR_CODE_SUBJECT_TYPE_NOT_FOUND", details: [] });
    const after = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["7"] } },
    });
    expect(after.body).toEqual({ tuples: [], continuous_token: "" });
  });

  it("an attribute name the schema cannot declare (digits, empty) is not a shape error: 404 ATTRIBUTE_DEFINITION_NOT_FOUND, as Permify answers", async () => {
    for (const attribute of ["public1", "", "is-public"]) {
      const r = await s.call(`${T}/data/write`, {
        metadata: {},
        attributes: [{ entity: { type: "document", id: "1" }, attribute, value: bool(true) }],
      });
      expect(r.status, attribute).toBe(404);
      expect(r.body).toEqual({ code: 5, message: "ERROR_CODE_ATTRIBUTE_DEFINITION_NOT_FOUND", details: [] });
    }
  });

  it("write errors: entity == subject, attribute type mismatch, empty Any, unknown entity type (SCHEMA_NOT_FOUND), unknown schema version", async () => {
    const same = await s.call(`${T}/data/write`, {
      metadata: {},
      tuples: [tuple("organization:1", "member", "organization:1#member")],
    });
    expect(same.body).toEqual({
      code: 3,
      message: "ERROR_CODE_ENTITY_AND_SUBJECT_CANNOT_BE_EQUAL",
      details: [],
    });
    const mismatch = await s.call(`${T}/data/write`, {
      metadata: {},
      attributes: [{ entity: { type: "document", id: "1" }, attribute: "is_public", value: int(3) }],
    });
    expect(mismatch.status).toBe(404);
    expect(mismatch.body).toEqual({ code: 5, message: "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH", details: [] });
    const empty = await s.call(`${T}/data/write`, {
      metadata: {},
      attributes: [{ entity: { type: "document", id: "1" }, attribute: "is_public", value: {} }],
    });
    expect(empty.status).toBe(404);
    expect(empty.body).toEqual({ code: 5, message: "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH", details: [] });
    const notFound = { code: 5, message: "ERROR_CODE_SCHEMA_NOT_FOUND", details: [] };
    const unknownType = await s.call(`${T}/data/write`, {
      metadata: {},
      tuples: [tuple("folder:1", "owner", "user:1")],
    });
    expect(unknownType).toMatchObject({ status: 404, body: notFound });
    const unknownAttributeType = await s.call(`${T}/data/write`, {
      metadata: {},
      attributes: [{ entity: { type: "folder", id: "1" }, attribute: "is_public", value: bool(true) }],
    });
    expect(unknownAttributeType).toMatchObject({ status: 404, body: notFound });
    const relationshipsWrite = await s.call(`${T}/relationships/write`, {
      metadata: {},
      tuples: [tuple("folder:1", "owner", "user:1")],
    });
    expect(relationshipsWrite).toMatchObject({ status: 404, body: notFound });
    const version = await s.call(`${T}/data/write`, {
      metadata: { schema_version: "cn0000000000000000zz" },
      tuples: [tuple("document:1", "owner", "user:1")],
    });
    expect(version.status).toBe(404);
    expect(version.body).toEqual({ code: 5, message: "ERROR_CODE_SCHEMA_NOT_FOUND", details: [] });
  });

  it("snap tokens: garbage is 400 ERROR_CODE_INVALID_SNAP_TOKEN", async () => {
    const r = await s.call(`${T}/data/relationships/read`, {
      metadata: { snap_token: "not a token" },
      filter: {},
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 3, message: "ERROR_CODE_INVALID_SNAP_TOKEN", details: [] });
  });

  it('deletes: data/delete and relationships/delete with empty filters delete nothing and answer snap token ""', async () => {
    const countBefore = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: {},
      page_size: 100,
    });
    const attributesBefore = await s.call(`${T}/data/attributes/read`, {
      metadata: {},
      filter: {},
      page_size: 100,
    });
    const none = await s.call(`${T}/data/delete`, { tuple_filter: {}, attribute_filter: {} });
    expect(none).toMatchObject({ status: 200, body: { snap_token: "" } });
    const emptyFields = await s.call(`${T}/data/delete`, {
      tuple_filter: {
        entity: { type: "", ids: [] },
        relation: "",
        subject: { type: "", ids: [], relation: "" },
      },
      attribute_filter: { entity: { type: "", ids: [] }, attributes: [] },
    });
    expect(emptyFields).toMatchObject({ status: 200, body: { snap_token: "" } });
    expect(
      (await s.call(`${T}/data/relationships/read`, { metadata: {}, filter: {}, page_size: 100 })).body,
    ).toEqual(countBefore.body);
    expect(
      (await s.call(`${T}/data/attributes/read`, { metadata: {}, filter: {}, page_size: 100 })).body,
    ).toEqual(attributesBefore.body);
    const missing = await s.call(`${T}/data/delete`, { attribute_filter: {} });
    expect(missing.body).toEqual({
      code: 3,
      message: "invalid DataDeleteRequest.TupleFilter: value is required",
      details: [],
    });
    const empty = await s.call(`${T}/relationships/delete`, { filter: {} });
    expect(empty).toMatchObject({ status: 200, body: { snap_token: "" } });
    const del = await s.call(`${T}/relationships/delete`, {
      filter: { entity: { type: "organization", ids: ["1"] } },
    });
    expect((del.body as { snap_token: string }).snap_token).not.toBe("");
    const read = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "organization" } },
    });
    expect(read.body).toEqual({ tuples: [], continuous_token: "" });
    const attr = await s.call(`${T}/data/delete`, {
      tuple_filter: {},
      attribute_filter: { entity: { type: "document", ids: ["2"] }, attributes: ["score"] },
    });
    expect(attr.status).toBe(200);
    const left = await s.call(`${T}/data/attributes/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["2"] } },
    });
    expect(left.body).toEqual({
      attributes: [{ entity: { type: "document", id: "2" }, attribute: "is_public", value: bool(true) }],
      continuous_token: "",
    });
  });

  it("bundles: write, read, run with arguments, delete; errors", async () => {
    const bundle = {
      name: "organization_created",
      arguments: ["creatorID", "organizationID"],
      operations: [
        {
          relationships_write: ["organization:{{.organizationID}}#admin@user:{{.creatorID}}"],
          relationships_delete: [],
          attributes_write: ["document:{{.organizationID}}$is_public|boolean:true"],
          attributes_delete: [],
        },
      ],
    };
    const w = await s.call(`${T}/bundle/write`, { bundles: [bundle] });
    expect(w).toMatchObject({ status: 200, body: { names: ["organization_created"] } });
    const r = await s.call(`${T}/bundle/read`, { name: "organization_created" });
    expect(r.body).toEqual({ bundle });
    const run = await s.call(`${T}/data/run-bundle`, {
      name: "organization_created",
      arguments: { creatorID: "564", organizationID: "789" },
    });
    expect(run.status).toBe(200);
    expect((run.body as { snap_token: string }).snap_token).not.toBe("");
    const read = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "organization", ids: ["789"] } },
    });
    expect(read.body).toEqual({
      tuples: [tuple("organization:789", "admin", "user:564")],
      continuous_token: "",
    });
    const missing = await s.call(`${T}/data/run-bundle`, {
      name: "organization_created",
      arguments: { creatorID: "1" },
    });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ code: 3, message: "ERROR_CODE_MISSING_ARGUMENT", details: [] });
    const unknown = await s.call(`${T}/data/run-bundle`, { name: "nope", arguments: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ code: 5, message: "ERROR_CODE_BUNDLE_NOT_FOUND", details: [] });
    const del = await s.call(`${T}/bundle/delete`, { name: "organization_created" });
    expect(del.body).toEqual({ name: "organization_created" });
    const gone = await s.call(`${T}/bundle/read`, { name: "organization_created" });
    expect(gone.body).toEqual({ code: 5, message: "ERROR_CODE_BUNDLE_NOT_FOUND", details: [] });
  });

  it("watch streams the changes after a snap token as NDJSON", async () => {
    const w = await s.call(`${T}/data/write`, {
      metadata: {},
      tuples: [tuple("document:20", "owner", "user:1")],
    });
    const from = (w.body as { snap_token: string }).snap_token;
    const watch = await openWatch(s, T, from);
    const res = watch.res;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    const w2 = await s.call(`${T}/data/write`, {
      metadata: {},
      tuples: [tuple("document:21", "owner", "user:2")],
      attributes: [
        { entity: { type: "document", id: "21" }, attribute: "is_public", value: { boolean: true } },
      ],
    });
    const first = await watch.firstLine();
    expect(first.changes.snap_token).toBe((w2.body as { snap_token: string }).snap_token);
    expect(first.changes.data_changes).toHaveLength(2);
    expect(first.changes.data_changes).toContainEqual({
      operation: "OPERATION_CREATE",
      tuple: tuple("document:21", "owner", "user:2"),
    });
    expect(first.changes.data_changes).toContainEqual({
      operation: "OPERATION_CREATE",
      attribute: { entity: { type: "document", id: "21" }, attribute: "is_public", value: bool(true) },
    });
  });
});
