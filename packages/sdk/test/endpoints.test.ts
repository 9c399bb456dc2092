/**
 * Every endpoint through the SDK against a real `pemba serve` (bundled CLI, SQLite file): schemas, data,
 * bundles, permissions (incl. iterators over all pages and the NDJSON stream), tenancy and watch.
 */

import { type ScratchServer, startScratchServe } from "@pemba/node-server/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, PembaApiError, type PembaClient, type Tuple } from "../src/index.ts";
import { SCHEMA } from "./shared.ts";

const doc = (id: string) => ({ type: "document", id });
const user = (id: string) => ({ type: "user", id });

describe("SDK endpoints against pemba serve", () => {
  let server: ScratchServer;
  let client: PembaClient;
  let schemaVersion = "";
  beforeAll(async () => {
    server = await startScratchServe();
    client = createClient({ baseUrl: server.url });
    schemaVersion = await client.writeSchema(SCHEMA);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("schemas: write answers a version that read, list and the iterator agree on", async () => {
    expect(schemaVersion).toMatch(/^[0-9a-v]{20}$/);
    const read = await client.readSchema();
    expect(Object.keys(read.entity_definitions).sort()).toEqual(["document", "organization", "user"]);
    expect(read.references).toMatchObject({ document: "REFERENCE_ENTITY" });
    const list = await client.listSchemas({ page_size: 10 });
    expect(list.head).toBe(schemaVersion);
    expect(list.schemas.map((s) => s.version)).toEqual([schemaVersion]);
    const all = [];
    for await (const s of client.schemas()) all.push(s.version);
    expect(all).toEqual([schemaVersion]);
  });

  it("schemas: partial write adds a relation to one entity, leaving the old version readable", async () => {
    const c = client.withTenant("partial");
    await client.createTenant({ id: "partial", name: "partial write" });
    const v1 = await c.writeSchema(SCHEMA);
    const v2 = await c.partialWriteSchema({ partials: { document: { write: ["relation editor @user"] } } });
    expect(v2).not.toBe(v1);
    const head = await c.readSchema();
    const docDef = head.entity_definitions.document as { relations: Record<string, unknown> };
    expect(Object.keys(docDef.relations).sort()).toEqual(["editor", "org", "owner", "viewer"]);
    const old = await c.readSchema({ metadata: { schema_version: v1 } });
    const oldDoc = old.entity_definitions.document as { relations: Record<string, unknown> };
    expect(Object.keys(oldDoc.relations).sort()).toEqual(["org", "owner", "viewer"]);
    expect((await c.listSchemas()).schemas.map((s) => s.version)).toEqual([v2, v1]);
    await client.deleteTenant("partial");
  });

  it("schemas: diff (Pemba extension) names what a new schema would orphan and flip, writing nothing", async () => {
    const c = client.withTenant("diff");
    await client.createTenant({ id: "diff", name: "schema diff" });
    const v1 = await c.writeSchema(SCHEMA);
    await c.writeData({
      tuples: [
        { entity: doc("1"), relation: "owner", subject: user("alice") },
        { entity: doc("1"), relation: "viewer", subject: user("bob") },
      ],
    });
    const diff = await c.diffSchema({
      schema: SCHEMA.replace("  relation viewer @user @organization#member\n", "").replace(" or viewer", ""),
    });
    expect(diff.base_version).toBe(v1);
    expect(diff.removed).toEqual([
      { kind: "RELATION", entity: "document", name: "viewer", tuples: 1, attributes: 0 },
    ]);
    expect(diff.permissions).toEqual([
      expect.objectContaining({
        entity: "document",
        permission: "view",
        allowed_to_denied: 1,
        denied_to_allowed: 0,
      }),
    ]);
    expect((await c.listSchemas()).head).toBe(v1);
    await client.deleteTenant("diff");
  });

  it("data: writes tuples and attributes (short and array forms), reads them back page by page", async () => {
    const written = await client.writeData({
      tuples: [
        { entity: doc("1"), relation: "owner", subject: user("alice") },
        {
          entity: doc("1"),
          relation: "viewer",
          subject: { type: "organization", id: "acme", relation: "member" },
        },
        { entity: { type: "organization", id: "acme" }, relation: "member", subject: user("bob") },
      ],
      attributes: [
        { entity: doc("2"), attribute: "public", value: { boolean: true } },
        { entity: doc("2"), attribute: "tags", value: { string_array: ["a", "b"] } },
      ],
    });
    expect(written.snap_token).not.toBe("");
    const page = await client.readRelationships({ filter: { entity: { type: "document" } }, page_size: 1 });
    expect(page.tuples).toHaveLength(1);
    expect(page.continuous_token).not.toBe("");
    const tuples: Tuple[] = [];
    for await (const t of client.relationships({ filter: { entity: { type: "document" } }, page_size: 1 })) {
      tuples.push(t);
    }
    expect(
      tuples.map((t) => `${t.entity.id}#${t.relation}@${t.subject.type}:${t.subject.id}`).sort(),
    ).toEqual(["1#owner@user:alice", "1#viewer@organization:acme"]);
    const attrs = [];
    for await (const a of client.attributes({
      filter: { entity: { type: "document", ids: ["2"] } },
      page_size: 1,
    })) {
      attrs.push(a);
    }
    expect(attrs.map((a) => [a.attribute, a.value]).sort()).toEqual([
      ["public", { "@type": "type.googleapis.com/base.v1.BooleanValue", data: true }],
      ["tags", { "@type": "type.googleapis.com/base.v1.StringArrayValue", data: ["a", "b"] }],
    ]);
  });

  it("permissions: check, can, bulk check, expand, subject permission", async () => {
    const owner = await client.check({ entity: doc("1"), permission: "edit", subject: user("alice") });
    expect(owner.can).toBe("CHECK_RESULT_ALLOWED");
    expect(await client.can("document:1", "view", "user:bob")).toBe(true);
    expect(await client.can("document:1", "edit", "user:bob")).toBe(false);
    expect(await client.can("document:2", "view", "user:nobody")).toBe(true); // public attribute
    const bulk = await client.bulkCheck({
      items: [
        { entity: doc("1"), permission: "view", subject: user("alice") },
        { entity: doc("1"), permission: "edit", subject: user("carol") },
      ],
    });
    expect(bulk.results.map((r) => r.can)).toEqual(["CHECK_RESULT_ALLOWED", "CHECK_RESULT_DENIED"]);
    const expanded = await client.expand({ entity: doc("1"), permission: "edit" });
    expect(expanded.tree.expand?.operation).toBe("OPERATION_UNION");
    expect(expanded.tree.expand?.children).toHaveLength(2);
    const all = await client.subjectPermission({ entity: doc("1"), subject: user("bob") });
    expect(all.results).toEqual({
      edit: "CHECK_RESULT_DENIED",
      org: "CHECK_RESULT_DENIED",
      owner: "CHECK_RESULT_DENIED",
      view: "CHECK_RESULT_ALLOWED",
      viewer: "CHECK_RESULT_ALLOWED",
    });
    const perms = await client.subjectPermission({
      entity: doc("1"),
      subject: user("bob"),
      metadata: { only_permission: true },
    });
    expect(perms.results).toEqual({ edit: "CHECK_RESULT_DENIED", view: "CHECK_RESULT_ALLOWED" });
  });

  it("explain (Pemba extension): the check's decision with the granting path, or every branch tried", async () => {
    const granted = await client.explain({ entity: doc("1"), permission: "view", subject: user("bob") });
    const checked = await client.check({ entity: doc("1"), permission: "view", subject: user("bob") });
    expect(granted.can).toBe(checked.can);
    expect(granted.can).toBe("CHECK_RESULT_ALLOWED");
    expect(granted.truncated).toBe(false);
    // the granting path, hop by hop: view = (edit or viewer) or public; viewer@organization:acme#member; bob
    const path: string[] = [];
    for (let n = granted.proof; ; n = n.children[0]) {
      path.push(`${n.kind} ${n.entity.type}:${n.entity.id}#${n.name}`);
      if (n.children.length === 0) {
        expect(n.tuple).toEqual({
          entity: { type: "organization", id: "acme" },
          relation: "member",
          subject: { type: "user", id: "bob", relation: "" },
        });
        break;
      }
    }
    expect(path).toEqual([
      "permission document:1#view",
      "union document:1#view",
      "union document:1#view",
      "relation document:1#viewer",
      "relation organization:acme#member",
      "direct organization:acme#member",
    ]);
    const denied = await client.explain({ entity: doc("1"), permission: "edit", subject: user("carol") });
    expect(denied.can).toBe("CHECK_RESULT_DENIED");
    const union = denied.proof.children[0];
    expect(union.children.map((c) => `${c.kind} ${c.name} ${c.result} ${c.reason ?? ""}`)).toEqual([
      "relation owner DENIED no tuple document:1#owner@user:carol",
      "tuple_to_userset org.admin DENIED no tuple document:1#org",
    ]);
    const unknown = { entity: { type: "nothing", id: "1" }, permission: "view", subject: user("bob") };
    const error = await client.explain(unknown).catch((e: unknown) => e);
    const checkError = await client.check(unknown, { timeoutMs: 5000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PembaApiError);
    expect((error as PembaApiError).errorCode).toBe("ERROR_CODE_SCHEMA_NOT_FOUND");
    expect([(error as PembaApiError).status, (error as PembaApiError).errorCode]).toEqual([
      (checkError as PembaApiError).status,
      (checkError as PembaApiError).errorCode,
    ]);
  });

  it("bulk check over 100 items is split into requests of 100 and answered in order", async () => {
    const items = Array.from({ length: 230 }, (_, i) => ({
      entity: doc("1"),
      permission: "view",
      subject: user(i % 2 === 0 ? "alice" : `u${i}`),
    }));
    const { results } = await client.bulkCheck({ items });
    expect(results).toHaveLength(230);
    expect(results.map((r) => r.can === "CHECK_RESULT_ALLOWED")).toEqual(items.map((_, i) => i % 2 === 0));
  });

  it("lookups: one page, every page through the iterators, and the NDJSON stream", async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `l${String(i).padStart(2, "0")}`);
    await client.writeData({
      tuples: ids.map((id) => ({ entity: doc(id), relation: "owner", subject: user("dora") })),
    });
    const first = await client.lookupEntity({
      entity_type: "document",
      permission: "edit",
      subject: user("dora"),
      page_size: 10,
    });
    expect(first.entity_ids).toHaveLength(10);
    expect(first.continuous_token).not.toBe("");
    const all: string[] = [];
    for await (const id of client.lookupEntities({
      entity_type: "document",
      permission: "edit",
      subject: user("dora"),
      page_size: 10,
    })) {
      all.push(id);
    }
    expect(all.sort()).toEqual(ids);
    const streamed: string[] = [];
    for await (const r of client.lookupEntityStream({
      entity_type: "document",
      permission: "edit",
      subject: user("dora"),
    })) {
      streamed.push(r.entity_id);
    }
    expect(streamed.sort()).toEqual(ids);
    const subjects: string[] = [];
    for await (const id of client.lookupSubjects({
      entity: doc("1"),
      permission: "view",
      subject_reference: { type: "user" },
      page_size: 1,
    })) {
      subjects.push(id);
    }
    expect(subjects.sort()).toEqual(["alice", "bob"]);
    const page = await client.lookupSubject({
      entity: doc("1"),
      permission: "view",
      subject_reference: { type: "user" },
    });
    expect(page.subject_ids.sort()).toEqual(["alice", "bob"]);
  });

  it("relationships write and delete; data delete needs both filters and removes what matches", async () => {
    await client.writeRelationships({
      tuples: [{ entity: doc("9"), relation: "owner", subject: user("erin") }],
    });
    expect(await client.can(doc("9"), "edit", user("erin"))).toBe(true);
    const deleted = await client.deleteRelationships({
      filter: { entity: { type: "document", ids: ["9"] } },
    });
    expect(deleted.snap_token).not.toBe("");
    expect(await client.can(doc("9"), "edit", user("erin"))).toBe(false);
    await client.writeData({
      attributes: [{ entity: doc("8"), attribute: "public", value: { boolean: true } }],
    });
    expect(await client.can(doc("8"), "view", user("x"))).toBe(true);
    await client.deleteData({
      tuple_filter: {},
      attribute_filter: { entity: { type: "document", ids: ["8"] } },
    });
    expect(await client.can(doc("8"), "view", user("x"))).toBe(false);
  });

  it("bundles: write, read, run with arguments, delete", async () => {
    const bundle = {
      name: "doc_created",
      arguments: ["docId", "owner"],
      operations: [
        { relationships_write: ["document:{{.docId}}#owner@user:{{.owner}}"], attributes_write: [] },
      ],
    };
    expect(await client.writeBundles([bundle])).toEqual(["doc_created"]);
    expect(await client.readBundle("doc_created")).toEqual({
      name: "doc_created",
      arguments: ["docId", "owner"],
      operations: [
        {
          relationships_write: ["document:{{.docId}}#owner@user:{{.owner}}"],
          relationships_delete: [],
          attributes_write: [],
          attributes_delete: [],
        },
      ],
    });
    const run = await client.runBundle("doc_created", { docId: "b1", owner: "fred" });
    expect(run.snap_token).not.toBe("");
    expect(await client.can(doc("b1"), "edit", user("fred"))).toBe(true);
    expect(await client.deleteBundle("doc_created")).toBe("doc_created");
    const error = await client.readBundle("doc_created").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PembaApiError);
    expect(error).toMatchObject({ status: 404, code: 5, errorCode: "ERROR_CODE_BUNDLE_NOT_FOUND" });
  });

  it("tenants: create, list (one page and all pages), delete; a tenant's data is its own", async () => {
    const made = await client.createTenant({ id: "sdk-tenant", name: "SDK" });
    expect(made).toMatchObject({ id: "sdk-tenant", name: "SDK" });
    expect(made.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const page = await client.listTenants({ page_size: 1 });
    expect(page.tenants).toHaveLength(1);
    const ids: string[] = [];
    for await (const t of client.tenants({ page_size: 1 })) ids.push(t.id);
    expect(ids.sort()).toEqual(["sdk-tenant", "t1"]);
    const other = client.withTenant("sdk-tenant");
    expect(other.tenantId).toBe("sdk-tenant");
    const missing = await other.readSchema().catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, errorCode: "ERROR_CODE_SCHEMA_NOT_FOUND" });
    expect(await client.deleteTenant("sdk-tenant")).toBe("sdk-tenant");
    const left: string[] = [];
    for await (const t of client.tenants()) left.push(t.id);
    expect(left).toEqual(["t1"]);
  });

  it("watch: yields each later transaction's changes; leaving the loop closes the stream", async () => {
    const start = await client.writeData({
      tuples: [{ entity: doc("w0"), relation: "owner", subject: user("gus") }],
    });
    const seen: string[] = [];
    const watching = (async () => {
      for await (const changes of client.watch({ snap_token: start.snap_token })) {
        for (const ch of changes.data_changes) {
          seen.push(`${ch.operation} ${ch.tuple?.entity.id}#${ch.tuple?.relation}@${ch.tuple?.subject.id}`);
        }
        if (seen.length >= 2) break;
      }
    })();
    await client.writeData({ tuples: [{ entity: doc("w1"), relation: "owner", subject: user("gus") }] });
    await client.deleteRelationships({ filter: { entity: { type: "document", ids: ["w1"] } } });
    await watching;
    expect(seen).toEqual(["OPERATION_CREATE w1#owner@gus", "OPERATION_DELETE w1#owner@gus"]);
  });

  it("errors carry the HTTP status, the gRPC code, Permify's error name and the URL", async () => {
    const error = await client
      .check({ entity: { type: "nope", id: "1" }, permission: "view", subject: user("a") }, {})
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PembaApiError);
    expect(error).toMatchObject({
      status: 404,
      code: 5,
      errorCode: "ERROR_CODE_SCHEMA_NOT_FOUND",
      url: `${server.url}/v1/tenants/t1/permissions/check`,
    });
    const invalid = await client
      .check({ entity: doc("1"), permission: "", subject: user("a") }, {})
      .catch((e) => e);
    expect(invalid).toMatchObject({
      status: 400,
      code: 3,
      errorCode: undefined,
      message:
        'invalid PermissionCheckRequest.Permission: value does not match regex pattern "^[a-zA-Z_]{1,64}$"',
    });
  });
});
