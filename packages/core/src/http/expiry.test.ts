/** `expires_at` over real HTTP: writes, bundles, reads, checks, errors, and the watch feed's delete on expiry. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openWatch, startTestServer, TEST_SCHEMA, type TestServer, tuple } from "./testing/harness.ts";

const T = "/v1/tenants/t1";
const PAST = "2001-01-01T00:00:00Z";
const FUTURE = "2999-01-01T00:00:00.000Z";
const bool = (data: boolean) => ({ "@type": "type.googleapis.com/base.v1.BooleanValue", data });
const user = (id: string) => ({ type: "user", id, relation: "" });
const doc = (id: string) => ({ type: "document", id });

describe("HTTP expires_at (Pemba extension)", () => {
  let s: TestServer;
  const check = async (id: string, subject: string, permission = "view") =>
    (
      (
        await s.call(`${T}/permissions/check`, {
          metadata: { depth: 20 },
          entity: doc(id),
          permission,
          subject: user(subject),
        })
      ).body as { can: string }
    ).can;
  beforeAll(async () => {
    s = await startTestServer();
    expect((await s.call(`${T}/schemas/write`, { schema: TEST_SCHEMA })).status).toBe(200);
  });
  afterAll(() => s.close());

  it("data/write and relationships/write take it; reads answer it in UTC; an expired row is absent", async () => {
    const w = await s.call(`${T}/data/write`, {
      metadata: {},
      tuples: [
        { ...tuple("document:1", "owner", "user:live"), expires_at: "2998-12-31T23:00:00-01:00" },
        { ...tuple("document:1", "owner", "user:gone"), expires_at: PAST },
      ],
      attributes: [
        { entity: doc("2"), attribute: "is_public", value: bool(true), expires_at: PAST },
        { entity: doc("3"), attribute: "is_public", value: bool(true), expires_at: FUTURE },
      ],
    });
    expect(w.status).toBe(200);
    const r = await s.call(`${T}/relationships/write`, {
      metadata: {},
      tuples: [
        { ...tuple("document:1", "viewer", "user:v"), expires_at: FUTURE },
        tuple("document:1", "viewer", "user:p"),
      ],
    });
    expect(r.status).toBe(200);
    const read = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["1"] } },
    });
    expect(read.body).toEqual({
      tuples: [
        { ...tuple("document:1", "owner", "user:live"), expires_at: FUTURE },
        { ...tuple("document:1", "viewer", "user:v"), expires_at: FUTURE },
        tuple("document:1", "viewer", "user:p"),
      ],
      continuous_token: "",
    });
    // a row without expiry keeps Permify's shape exactly (no expires_at key)
    expect(Object.keys((read.body as { tuples: object[] }).tuples[2]!)).toEqual([
      "entity",
      "relation",
      "subject",
    ]);
    const attrs = await s.call(`${T}/data/attributes/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["2", "3"] } },
    });
    expect(attrs.body).toEqual({
      attributes: [{ entity: doc("3"), attribute: "is_public", value: bool(true), expires_at: FUTURE }],
      continuous_token: "",
    });
    expect(await check("1", "live")).toBe("CHECK_RESULT_ALLOWED");
    expect(await check("1", "gone")).toBe("CHECK_RESULT_DENIED");
    expect(await check("2", "anyone")).toBe("CHECK_RESULT_DENIED");
    expect(await check("3", "anyone")).toBe("CHECK_RESULT_ALLOWED");
    const lookup = await s.call(`${T}/permissions/lookup-entity`, {
      metadata: { depth: 20 },
      entity_type: "document",
      permission: "edit",
      subject: user("gone"),
    });
    expect(lookup.body).toMatchObject({ entity_ids: [] });
  });

  it("refuses a malformed expires_at with Permify's validation error and writes nothing", async () => {
    const before = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["9"] } },
    });
    for (const bad of ["tomorrow", "2030-01-01", "2030-13-01T00:00:00Z", 1234]) {
      const w = await s.call(`${T}/data/write`, {
        metadata: {},
        tuples: [
          tuple("document:9", "owner", "user:1"),
          { ...tuple("document:9", "owner", "user:2"), expires_at: bad },
        ],
      });
      expect(w.status).toBe(400);
      expect((w.body as { code: number; message: string }).code).toBe(3);
      expect((w.body as { message: string }).message).toMatch(
        /^invalid DataWriteRequest\.Tuples\[1\]: embedded message failed validation \| caused by: invalid Tuple\.ExpiresAt: value must be an RFC 3339 timestamp/,
      );
    }
    const after = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["9"] } },
    });
    expect(after.body).toEqual(before.body);
    const contextual = await s.call(`${T}/permissions/check`, {
      metadata: { depth: 20 },
      entity: doc("9"),
      permission: "view",
      subject: user("1"),
      context: { tuples: [{ ...tuple("document:9", "owner", "user:1"), expires_at: FUTURE }] },
    });
    expect(contextual.status).toBe(400);
    expect(contextual.body).toMatchObject({
      code: 3,
      message: "expires_at is not allowed on contextual tuples and attributes",
    });
  });

  it("bundles: a written relationship or attribute may end with ` expires_at=<RFC 3339>`", async () => {
    const bundle = {
      name: "grant_until",
      arguments: ["doc", "user", "until"],
      operations: [
        {
          relationships_write: ["document:{{.doc}}#viewer@user:{{.user}} expires_at={{.until}}"],
          relationships_delete: [],
          attributes_write: ["document:{{.doc}}$is_public|boolean:true expires_at={{.until}}"],
          attributes_delete: [],
        },
      ],
    };
    expect((await s.call(`${T}/bundle/write`, { bundles: [bundle] })).status).toBe(200);
    const run = await s.call(`${T}/data/run-bundle`, {
      name: "grant_until",
      arguments: { doc: "30", user: "b", until: FUTURE },
    });
    expect(run.status).toBe(200);
    const read = await s.call(`${T}/data/relationships/read`, {
      metadata: {},
      filter: { entity: { type: "document", ids: ["30"] } },
    });
    expect(read.body).toEqual({
      tuples: [{ ...tuple("document:30", "viewer", "user:b"), expires_at: FUTURE }],
      continuous_token: "",
    });
    await s.call(`${T}/data/run-bundle`, {
      name: "grant_until",
      arguments: { doc: "31", user: "b", until: PAST },
    });
    expect(await check("31", "b")).toBe("CHECK_RESULT_DENIED");
    const bad = await s.call(`${T}/data/run-bundle`, {
      name: "grant_until",
      arguments: { doc: "32", user: "b", until: "soon" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ message: "invalid expires_at (want RFC 3339): soon" });
  });

  it("watch reports an expiry as a delete once it takes effect", async () => {
    // the rows the earlier tests wrote already expired: swept first, so the stream's first change is ours
    await s.service.sweepExpired("t1");
    const expiresAt = new Date(Date.now() + 400).toISOString();
    const w = await s.call(`${T}/data/write`, {
      metadata: {},
      tuples: [{ ...tuple("document:40", "owner", "user:w"), expires_at: expiresAt }],
    });
    const from = (w.body as { snap_token: string }).snap_token;
    expect(await check("40", "w")).toBe("CHECK_RESULT_ALLOWED");
    const first = await (await openWatch(s, T, from)).firstLine();
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect(first.changes.data_changes).toEqual([
      {
        operation: "OPERATION_DELETE",
        tuple: { ...tuple("document:40", "owner", "user:w"), expires_at: expiresAt },
      },
    ]);
    expect(await check("40", "w")).toBe("CHECK_RESULT_DENIED");
  });
});
