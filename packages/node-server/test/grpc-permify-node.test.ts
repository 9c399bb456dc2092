/**
 * Permify's official Node client, @permify/permify-node 1.7.3 unchanged, against `pemba serve --grpc-port` over
 * real HTTP/2: every one of the 25 base.v1 RPCs, with data written through gRPC and through HTTP, each answer equal
 * field by field to the HTTP API's answer for the same request (both read as the proto message: the client's
 * bytes re-encoded by its own codec, the HTTP JSON by proto3 JSON rules), errors as gRPC statuses, health and
 * reflection.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, type DescMessage, fromBinary, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { grpcTypeRegistry } from "@pemba/core";
import { freePort } from "@pemba/core/testing/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, startServe } from "../src/testing/cli-process.ts";
import { permify, permifyClient } from "./permify-node.ts";

const ADMIN = "grpc-admin-key";
const LIMITED = "grpc-t1-key";
const SCHEMA = `entity user {}
entity organization {
  relation member @user
}
entity document {
  relation org @organization
  relation owner @user
  relation viewer @user @organization#member
  attribute public boolean
  permission edit = owner
  permission view = owner or viewer or public or org.member
}
`;

type Client = ReturnType<typeof permifyClient>;

let server: CliProcess & { url: string };
let grpcAddress: string;
let client: Client;

async function http(method: string, path: string, body: unknown, key = ADMIN) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    // an empty key: no authorization header at all
    headers: {
      "content-type": "application/json",
      ...(key === "" ? {} : { authorization: `Bearer ${key}` }),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** An HTTP answer's JSON; fails the test on an error status. */
async function httpJson(method: string, path: string, body: unknown): Promise<JsonValue> {
  const r = await http(method, path, body);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
  return JSON.parse(r.text) as JsonValue;
}

const desc = (name: string): DescMessage => {
  const found = grpcTypeRegistry.getMessage(`base.v1.${name}`);
  if (found === undefined) throw new Error(`no message base.v1.${name}`);
  return found;
};
const protoJson = (d: DescMessage, message: Parameters<typeof toJson>[1]) =>
  toJson(d, message, { registry: grpcTypeRegistry, useProtoFieldName: true });

/** The permify-node answer as proto JSON: its own codec's bytes, decoded as the proto message. */
function fromClient(name: string, answer: unknown): JsonValue {
  const codec = permify.grpc.payload[name]!;
  return protoJson(desc(name), fromBinary(desc(name), codec.encode(answer).finish()));
}

/** The HTTP answer as the same proto message's JSON (Pemba's extension fields, not in the proto, left out). */
function fromHttp(name: string, json: JsonValue): JsonValue {
  return protoJson(
    desc(name),
    fromJson(desc(name), json, { registry: grpcTypeRegistry, ignoreUnknownFields: true }),
  );
}

/** Asserts the gRPC and HTTP answers are the same message, and returns it (as proto JSON) for spot checks. */
function same(name: string, grpcAnswer: unknown, httpAnswer: JsonValue): Record<string, unknown> {
  const viaGrpc = fromClient(name, grpcAnswer);
  expect(viaGrpc).toEqual(fromHttp(name, httpAnswer));
  return viaGrpc as Record<string, unknown>;
}

/** A boolean attribute value as permify-node users build it: a google.protobuf.Any of base.v1.BooleanValue. */
const booleanAny = (data: boolean) => ({
  typeUrl: "type.googleapis.com/base.v1.BooleanValue",
  value: permify.grpc.base.BooleanValue.encode({ data }).finish(),
});

const entity = (type: string, id: string) => ({ type, id });
const subject = (type: string, id: string, relation = "") => ({ type, id, relation });

/** The status of a call that must fail. */
async function statusOf(call: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await call;
  } catch (e) {
    const { code, details } = e as { code: number; details: string };
    return { code, details };
  }
  throw new Error("the call succeeded");
}

beforeAll(async () => {
  const port = await freePort();
  server = await startServe([
    "--database",
    "memory:",
    "--grpc-port",
    String(port),
    "--auth-keys",
    `${ADMIN},${LIMITED}:t1`,
  ]);
  const line = await server.waitForLog((e) => typeof e.grpc === "string");
  grpcAddress = line.grpc as string;
  client = permifyClient(grpcAddress, ADMIN);
}, 60_000);

afterAll(async () => {
  if (server !== undefined) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
});

describe("permify-node 1.7.3 against pemba serve's gRPC port", () => {
  it("serves on the port it logs, as plain HTTP/2", () => {
    expect(grpcAddress).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it("tenancy: create, list and delete answer as over HTTP", async () => {
    const created = await client.tenancy.create({ id: "t-grpc", name: "over grpc" });
    expect(created.tenant?.id).toBe("t-grpc");
    expect(created.tenant?.name).toBe("over grpc");
    await httpJson("POST", "/v1/tenants/create", { id: "t-http", name: "over http" });
    await client.tenancy.create({ id: "t-gone", name: "to delete" });
    const listed = same(
      "TenantListResponse",
      await client.tenancy.list({ pageSize: 10, continuousToken: "" }),
      await httpJson("POST", "/v1/tenants/list", { page_size: 10 }),
    );
    expect((listed.tenants as { id: string }[]).map((t) => t.id).sort()).toEqual([
      "t-gone",
      "t-grpc",
      "t-http",
      "t1",
    ]);
    const deleted = await client.tenancy.delete({ id: "t-gone" });
    expect(fromClient("TenantDeleteResponse", deleted)).toEqual({ tenant_id: "t-gone" });
    const paged = await client.tenancy.list({ pageSize: 1, continuousToken: "" });
    same("TenantListResponse", paged, await httpJson("POST", "/v1/tenants/list", { page_size: 1 }));
    same(
      "TenantListResponse",
      await client.tenancy.list({ pageSize: 1, continuousToken: paged.continuousToken }),
      await httpJson("POST", "/v1/tenants/list", { page_size: 1, continuous_token: paged.continuousToken }),
    );
  });

  it("schema: write, read, list and partial write answer as over HTTP", async () => {
    const written = await client.schema.write({ tenantId: "t1", schema: SCHEMA });
    expect(written.schemaVersion).not.toBe("");
    const read = same(
      "SchemaReadResponse",
      await client.schema.read({ tenantId: "t1", metadata: { schemaVersion: "" } }),
      await httpJson("POST", "/v1/tenants/t1/schemas/read", { metadata: { schema_version: "" } }),
    );
    expect(Object.keys((read.schema as { entity_definitions: object }).entity_definitions).sort()).toEqual([
      "document",
      "organization",
      "user",
    ]);
    same(
      "SchemaListResponse",
      await client.schema.list({ tenantId: "t1", pageSize: 10, continuousToken: "" }),
      await httpJson("POST", "/v1/tenants/t1/schemas/list", { page_size: 10 }),
    );
    // the same partial write on two tenants with the same schema, one per transport: the same definitions
    await httpJson("POST", "/v1/tenants/t-http/schemas/write", { schema: SCHEMA });
    const partials = {
      document: { write: ["permission share = owner"], delete: [], update: [] },
    };
    const viaGrpc = await client.schema.partialWrite({
      tenantId: "t1",
      metadata: { schemaVersion: "" },
      partials: Object.fromEntries(
        Object.entries(partials).map(([name, p]) => [
          name,
          { write: p.write, delete: p.delete, update: p.update },
        ]),
      ),
    });
    const viaHttp = await httpJson("PATCH", "/v1/tenants/t-http/schemas/partial-write", {
      metadata: { schema_version: "" },
      partials,
    });
    expect(Object.keys(fromClient("SchemaPartialWriteResponse", viaGrpc) as object)).toEqual(
      Object.keys(fromHttp("SchemaPartialWriteResponse", viaHttp) as object),
    );
    expect(viaGrpc.schemaVersion).not.toBe(written.schemaVersion);
    const after = (tenant: string) =>
      httpJson("POST", `/v1/tenants/${tenant}/schemas/read`, { metadata: { schema_version: "" } });
    const definitions = (json: JsonValue) =>
      (fromHttp("SchemaReadResponse", json) as { schema: unknown }).schema;
    expect(definitions(await after("t1"))).toEqual(definitions(await after("t-http")));
    const grpcRead = await client.schema.read({ tenantId: "t1", metadata: { schemaVersion: "" } });
    expect(Object.keys(grpcRead.schema?.entityDefinitions.document?.permissions ?? {}).sort()).toEqual([
      "edit",
      "share",
      "view",
    ]);
  });

  it("data: writes through gRPC and HTTP, reads answer as over HTTP, paged", async () => {
    const write = await client.data.write({
      tenantId: "t1",
      metadata: { schemaVersion: "" },
      tuples: [
        { entity: entity("document", "d1"), relation: "owner", subject: subject("user", "alice") },
        { entity: entity("document", "d2"), relation: "org", subject: subject("organization", "o1") },
      ],
      attributes: [{ entity: entity("document", "d3"), attribute: "public", value: booleanAny(true) }],
    });
    expect(write.snapToken).not.toBe("");
    const rel = await client.data.writeRelationships({
      tenantId: "t1",
      metadata: { schemaVersion: "" },
      tuples: [
        { entity: entity("organization", "o1"), relation: "member", subject: subject("user", "bob") },
        {
          entity: entity("document", "d4"),
          relation: "viewer",
          subject: subject("organization", "o1", "member"),
        },
      ],
    });
    expect(rel.snapToken).not.toBe("");
    await httpJson("POST", "/v1/tenants/t1/data/write", {
      metadata: { schema_version: "" },
      tuples: [
        { entity: entity("document", "d5"), relation: "viewer", subject: subject("user", "carol") },
        { entity: entity("document", "d1"), relation: "viewer", subject: subject("user", "bob") },
      ],
      attributes: [
        {
          entity: entity("document", "d6"),
          attribute: "public",
          value: { "@type": "type.googleapis.com/base.v1.BooleanValue", data: false },
        },
      ],
    });

    const page1 = await client.data.readRelationships({
      tenantId: "t1",
      metadata: { snapToken: "" },
      filter: {
        entity: { type: "document", ids: [] },
        relation: "",
        subject: { type: "", ids: [], relation: "" },
      },
      pageSize: 2,
      continuousToken: "",
    });
    const relFilter = { entity: { type: "document", ids: [] } };
    same(
      "RelationshipReadResponse",
      page1,
      await httpJson("POST", "/v1/tenants/t1/data/relationships/read", {
        metadata: { snap_token: "" },
        filter: relFilter,
        page_size: 2,
      }),
    );
    expect(page1.tuples).toHaveLength(2);
    expect(page1.continuousToken).not.toBe("");
    const page2 = await client.data.readRelationships({
      tenantId: "t1",
      metadata: { snapToken: "" },
      filter: { entity: { type: "document", ids: [] } },
      pageSize: 10,
      continuousToken: page1.continuousToken,
    });
    same(
      "RelationshipReadResponse",
      page2,
      await httpJson("POST", "/v1/tenants/t1/data/relationships/read", {
        metadata: { snap_token: "" },
        filter: relFilter,
        page_size: 10,
        continuous_token: page1.continuousToken,
      }),
    );
    expect(page1.tuples.length + page2.tuples.length).toBe(5);

    const attributes = same(
      "AttributeReadResponse",
      await client.data.readAttributes({
        tenantId: "t1",
        metadata: { snapToken: "" },
        filter: { entity: { type: "document", ids: [] }, attributes: [] },
        pageSize: 10,
        continuousToken: "",
      }),
      await httpJson("POST", "/v1/tenants/t1/data/attributes/read", {
        metadata: { snap_token: "" },
        filter: { entity: { type: "document", ids: [] } },
        page_size: 10,
      }),
    );
    expect(attributes.attributes).toEqual([
      {
        entity: { type: "document", id: "d3" },
        attribute: "public",
        value: { "@type": "type.googleapis.com/base.v1.BooleanValue", data: true },
      },
      {
        entity: { type: "document", id: "d6" },
        attribute: "public",
        value: { "@type": "type.googleapis.com/base.v1.BooleanValue" },
      },
    ]);
  });

  it("permissions: check, bulk check, expand, lookups (paged and streamed), subject permission", async () => {
    const metadata = { snapToken: "", schemaVersion: "", depth: 20 };
    const wireMeta = { snap_token: "", schema_version: "", depth: 20 };
    const checks: [string, string, string, string][] = [
      ["d1", "view", "bob", "CHECK_RESULT_ALLOWED"],
      ["d2", "view", "bob", "CHECK_RESULT_ALLOWED"],
      ["d3", "view", "zed", "CHECK_RESULT_ALLOWED"],
      ["d6", "view", "zed", "CHECK_RESULT_DENIED"],
      ["d1", "edit", "bob", "CHECK_RESULT_DENIED"],
    ];
    for (const [doc, permission, user, expected] of checks) {
      const answer = same(
        "PermissionCheckResponse",
        await client.permission.check({
          tenantId: "t1",
          metadata,
          entity: entity("document", doc),
          permission,
          subject: subject("user", user),
          context: undefined,
          arguments: [],
        }),
        await httpJson("POST", "/v1/tenants/t1/permissions/check", {
          metadata: wireMeta,
          entity: entity("document", doc),
          permission,
          subject: subject("user", user),
        }),
      );
      expect(answer.can).toBe(expected);
    }

    const items = checks.map(([doc, permission, user]) => ({
      entity: entity("document", doc),
      permission,
      subject: subject("user", user),
    }));
    const bulk = same(
      "PermissionBulkCheckResponse",
      await client.permission.bulkCheck({
        tenantId: "t1",
        metadata,
        items,
        context: undefined,
        arguments: [],
      }),
      await httpJson("POST", "/v1/tenants/t1/permissions/bulk-check", { metadata: wireMeta, items }),
    );
    expect((bulk.results as { can: string }[]).map((r) => r.can)).toEqual(checks.map((c) => c[3]));

    const expand = same(
      "PermissionExpandResponse",
      await client.permission.expand({
        tenantId: "t1",
        metadata: { snapToken: "", schemaVersion: "" },
        entity: entity("document", "d1"),
        permission: "view",
        context: undefined,
        arguments: [],
      }),
      await httpJson("POST", "/v1/tenants/t1/permissions/expand", {
        metadata: { snap_token: "", schema_version: "" },
        entity: entity("document", "d1"),
        permission: "view",
      }),
    );
    expect(JSON.stringify(expand.tree)).toContain('"id":"alice"');

    const lookupBody = {
      metadata: wireMeta,
      entity_type: "document",
      permission: "view",
      subject: subject("user", "bob"),
    };
    const lookupRequest = {
      tenantId: "t1",
      metadata,
      entityType: "document",
      permission: "view",
      subject: subject("user", "bob"),
      context: undefined,
      scope: {},
    };
    const all = same(
      "PermissionLookupEntityResponse",
      await client.permission.lookupEntity({ ...lookupRequest, pageSize: 0, continuousToken: "" }),
      await httpJson("POST", "/v1/tenants/t1/permissions/lookup-entity", lookupBody),
    );
    expect((all.entity_ids as string[]).sort()).toEqual(["d1", "d2", "d3", "d4"]);
    const first = await client.permission.lookupEntity({
      ...lookupRequest,
      pageSize: 2,
      continuousToken: "",
    });
    same(
      "PermissionLookupEntityResponse",
      first,
      await httpJson("POST", "/v1/tenants/t1/permissions/lookup-entity", { ...lookupBody, page_size: 2 }),
    );
    expect(first.entityIds).toHaveLength(2);
    same(
      "PermissionLookupEntityResponse",
      await client.permission.lookupEntity({
        ...lookupRequest,
        pageSize: 2,
        continuousToken: first.continuousToken,
      }),
      await httpJson("POST", "/v1/tenants/t1/permissions/lookup-entity", {
        ...lookupBody,
        page_size: 2,
        continuous_token: first.continuousToken,
      }),
    );

    const streamed: JsonValue[] = [];
    for await (const message of client.permission.lookupEntityStream({
      ...lookupRequest,
      pageSize: 0,
      continuousToken: "",
    })) {
      streamed.push(fromClient("PermissionLookupEntityStreamResponse", message));
    }
    const lines = (await http("POST", "/v1/tenants/t1/permissions/lookup-entity-stream", lookupBody)).text
      .split("\n")
      .filter((l) => l !== "")
      .map((l) =>
        fromHttp("PermissionLookupEntityStreamResponse", (JSON.parse(l) as { result: JsonValue }).result),
      );
    expect(streamed).toEqual(lines);
    expect(streamed.map((m) => (m as { entity_id: string }).entity_id).sort()).toEqual([
      "d1",
      "d2",
      "d3",
      "d4",
    ]);

    const subjects = same(
      "PermissionLookupSubjectResponse",
      await client.permission.lookupSubject({
        tenantId: "t1",
        metadata: { snapToken: "", schemaVersion: "", depth: 20 },
        entity: entity("document", "d1"),
        permission: "view",
        subjectReference: { type: "user", relation: "" },
        context: undefined,
        pageSize: 0,
        continuousToken: "",
      }),
      await httpJson("POST", "/v1/tenants/t1/permissions/lookup-subject", {
        metadata: wireMeta,
        entity: entity("document", "d1"),
        permission: "view",
        subject_reference: { type: "user", relation: "" },
      }),
    );
    expect((subjects.subject_ids as string[]).sort()).toEqual(["alice", "bob"]);

    const permissions = same(
      "PermissionSubjectPermissionResponse",
      await client.permission.subjectPermission({
        tenantId: "t1",
        metadata: { snapToken: "", schemaVersion: "", onlyPermission: false, depth: 20 },
        entity: entity("document", "d1"),
        subject: subject("user", "alice"),
        context: undefined,
      }),
      await httpJson("POST", "/v1/tenants/t1/permissions/subject-permission", {
        metadata: { snap_token: "", schema_version: "", only_permission: false, depth: 20 },
        entity: entity("document", "d1"),
        subject: subject("user", "alice"),
      }),
    );
    expect(permissions.results).toMatchObject({ edit: "CHECK_RESULT_ALLOWED", view: "CHECK_RESULT_ALLOWED" });
  });

  it("bundles: write, read, run and delete answer as over HTTP", async () => {
    const bundle = {
      name: "onboard",
      arguments: ["doc", "owner"],
      operations: [
        {
          relationshipsWrite: ["document:{{.doc}}#owner@user:{{.owner}}"],
          relationshipsDelete: [],
          attributesWrite: ["document:{{.doc}}$public|boolean:true"],
          attributesDelete: [],
        },
      ],
    };
    const written = await client.bundle.write({ tenantId: "t1", bundles: [bundle] });
    expect(written.names).toEqual(["onboard"]);
    const read = same(
      "BundleReadResponse",
      await client.bundle.read({ tenantId: "t1", name: "onboard" }),
      await httpJson("POST", "/v1/tenants/t1/bundle/read", { name: "onboard" }),
    );
    expect(read.bundle).toMatchObject({ name: "onboard", arguments: ["doc", "owner"] });
    const ran = await client.data.runBundle({
      tenantId: "t1",
      name: "onboard",
      arguments: { doc: "d9", owner: "dan" },
    });
    expect(ran.snapToken).not.toBe("");
    const check = await client.permission.check({
      tenantId: "t1",
      metadata: { snapToken: ran.snapToken, schemaVersion: "", depth: 20 },
      entity: entity("document", "d9"),
      permission: "edit",
      subject: subject("user", "dan"),
      context: undefined,
      arguments: [],
    });
    expect(check.can).toBe(permify.grpc.base.CheckResult.CHECK_RESULT_ALLOWED);
    const deleted = await client.bundle.delete({ tenantId: "t1", name: "onboard" });
    expect(fromClient("BundleDeleteResponse", deleted)).toEqual({ name: "onboard" });
    const gone = await statusOf(client.bundle.read({ tenantId: "t1", name: "onboard" }));
    const httpGone = JSON.parse((await http("POST", "/v1/tenants/t1/bundle/read", { name: "onboard" })).text);
    expect(gone).toEqual({ code: 5, details: "ERROR_CODE_BUNDLE_NOT_FOUND" });
    expect(httpGone).toMatchObject({ code: gone.code, message: gone.details });
  });

  it("data: delete and delete relationships through gRPC, seen by HTTP reads", async () => {
    const deleteRel = await client.data.deleteRelationships({
      tenantId: "t1",
      filter: { entity: { type: "document", ids: ["d5"] }, relation: "viewer" },
    });
    expect(deleteRel.snapToken).not.toBe("");
    const deleted = await client.data.delete({
      tenantId: "t1",
      tupleFilter: { entity: { type: "document", ids: ["d9"] } },
      attributeFilter: { entity: { type: "document", ids: ["d9"] }, attributes: [] },
    });
    expect(deleted.snapToken).not.toBe("");
    const left = (await httpJson("POST", "/v1/tenants/t1/data/relationships/read", {
      metadata: { snap_token: deleted.snapToken },
      filter: { entity: { type: "document", ids: ["d5", "d9"] } },
    })) as { tuples: unknown[] };
    expect(left.tuples).toEqual([]);
  });

  it("watch: a gRPC watch receives writes made over HTTP, as the HTTP watch does", async () => {
    // both watches start after this write's snap token: the next write is the first change each one sees
    const { snap_token: start } = (await httpJson("POST", "/v1/tenants/t1/data/write", {
      metadata: { schema_version: "" },
      tuples: [{ entity: entity("document", "w0"), relation: "owner", subject: subject("user", "wendy") }],
    })) as { snap_token: string };
    const abort = new AbortController();
    const watch = client.watch.watch({ tenantId: "t1", snapToken: start }, { signal: abort.signal });
    const firstGrpc = watch[Symbol.asyncIterator]().next();
    const httpWatch = await fetch(`${server.url}/v1/tenants/t1/watch`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ snap_token: start }),
      signal: abort.signal,
    });
    await httpJson("POST", "/v1/tenants/t1/data/write", {
      metadata: { schema_version: "" },
      tuples: [{ entity: entity("document", "w1"), relation: "owner", subject: subject("user", "wendy") }],
    });
    const grpcChange = fromClient("WatchResponse", (await firstGrpc).value);
    const reader = httpWatch.body!.getReader();
    let text = "";
    while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    expect(grpcChange).toEqual(fromHttp("WatchResponse", JSON.parse(text.split("\n")[0]!)));
    expect(grpcChange).toMatchObject({
      changes: {
        data_changes: [
          {
            operation: "OPERATION_CREATE",
            tuple: {
              entity: { type: "document", id: "w1" },
              relation: "owner",
              subject: { type: "user", id: "wendy" },
            },
          },
        ],
      },
    });
  });
});

describe("one pipeline: gRPC calls are counted and logged as their HTTP routes", () => {
  it("subject permission, called once over each transport, counts twice and logs twice", async () => {
    const metrics = await (
      await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).text();
    const route = "/v1/tenants/:tenant_id/permissions/subject-permission";
    expect(metrics).toContain(`pemba_http_requests_total{route="${route}",status="200"} 2\n`);
    const logged = server
      .stdout()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { route?: string; msg?: string; status?: number })
      .filter((e) => e.route === route && e.msg === "request" && e.status === 200);
    expect(logged).toHaveLength(2);
  });
});

describe("errors as gRPC statuses: the code and message of the HTTP error body", () => {
  const checkBody = (depth: number) => ({
    metadata: { snap_token: "", schema_version: "", depth },
    entity: entity("document", "d1"),
    permission: "view",
    subject: subject("user", "alice"),
  });
  const checkRequest = (tenantId: string, depth: number) => ({
    tenantId,
    metadata: { snapToken: "", schemaVersion: "", depth },
    entity: entity("document", "d1"),
    permission: "view",
    subject: subject("user", "alice"),
    context: undefined,
    arguments: [],
  });
  const asHttp = async (path: string, body: unknown, key = ADMIN) => {
    const r = await http("POST", path, body, key);
    const { code, message } = JSON.parse(r.text) as { code: number; message: string };
    return { code, details: message };
  };

  it("unknown tenant", async () => {
    const status = await statusOf(client.permission.check(checkRequest("nobody", 20)));
    expect(status).toEqual({ code: 5, details: "ERROR_CODE_SCHEMA_NOT_FOUND" });
    expect(status).toEqual(await asHttp("/v1/tenants/nobody/permissions/check", checkBody(20)));
  });

  it("invalid schema", async () => {
    const status = await statusOf(client.schema.write({ tenantId: "t1", schema: "entity user {" }));
    // Permify's answer to a schema that does not parse: INTERNAL, with the parser's line:column message
    expect(status).toEqual({ code: 13, details: "1:17:expected token to be RCB, got EOF instead" });
    expect(status).toEqual(await asHttp("/v1/tenants/t1/schemas/write", { schema: "entity user {" }));
  });

  it("depth too small", async () => {
    const status = await statusOf(client.permission.check(checkRequest("t1", 2)));
    expect(status).toEqual({
      code: 3,
      details:
        "invalid PermissionCheckRequest.Metadata: embedded message failed validation | caused by: invalid PermissionCheckRequestMetadata.Depth: value must be greater than or equal to 3",
    });
    expect(status).toEqual(await asHttp("/v1/tenants/t1/permissions/check", checkBody(2)));
  });

  it("missing key, invalid key, and a key limited to other tenants", async () => {
    const bare = permifyClient(grpcAddress);
    const missing = await statusOf(bare.permission.check(checkRequest("t1", 20)));
    // Permify's own answer: gRPC UNKNOWN (2) for a call without the authorization metadata
    expect(missing).toEqual({ code: 2, details: "ERROR_CODE_MISSING_BEARER_TOKEN" });
    expect(missing).toEqual(await asHttp("/v1/tenants/t1/permissions/check", checkBody(20), ""));
    const invalid = permifyClient(grpcAddress, "wrong-key");
    const wrong = await statusOf(invalid.permission.check(checkRequest("t1", 20)));
    expect(wrong).toEqual({ code: 16, details: "ERROR_CODE_INVALID_KEY" });
    expect(wrong).toEqual(await asHttp("/v1/tenants/t1/permissions/check", checkBody(20), "wrong-key"));
    const limited = permifyClient(grpcAddress, LIMITED);
    expect((await limited.permission.check(checkRequest("t1", 20))).can).toBe(
      permify.grpc.base.CheckResult.CHECK_RESULT_ALLOWED,
    );
    const other = await statusOf(limited.permission.check(checkRequest("t-http", 20)));
    expect(other).toEqual(await asHttp("/v1/tenants/t-http/permissions/check", checkBody(20), LIMITED));
    expect(other).toEqual({ code: 7, details: "ERROR_CODE_PERMISSION_DENIED" });
    const tenancy = await statusOf(limited.tenancy.list({ pageSize: 1, continuousToken: "" }));
    expect(tenancy).toEqual(await asHttp("/v1/tenants/list", { page_size: 1 }, LIMITED));
  });
});

describe("health and reflection", () => {
  const transport = () => createGrpcTransport({ baseUrl: `http://${grpcAddress}` });

  it("grpc.health.v1: the server and each base.v1 service are SERVING; an unknown one is NOT_FOUND", async () => {
    const health = createClient(
      grpcTypeRegistry.getService("grpc.health.v1.Health")!,
      transport(),
    ) as unknown as {
      check(req: { service: string }): Promise<{ status: number }>;
    };
    expect((await health.check({ service: "" })).status).toBe(1);
    expect((await health.check({ service: "base.v1.Permission" })).status).toBe(1);
    await expect(health.check({ service: "nope.Service" })).rejects.toMatchObject({ code: 5 });
  });

  it("grpc.reflection.v1: lists the services and answers a symbol with its file and imports", async () => {
    const service = grpcTypeRegistry.getService("grpc.reflection.v1.ServerReflection")!;
    const requestDesc = grpcTypeRegistry.getMessage("grpc.reflection.v1.ServerReflectionRequest")!;
    const reflection = createClient(service, transport()) as unknown as {
      serverReflectionInfo(requests: AsyncIterable<unknown>): AsyncIterable<{
        messageResponse: {
          case: string;
          value: { service?: { name: string }[]; fileDescriptorProto?: Uint8Array[] };
        };
      }>;
    };
    async function* requests() {
      yield create(requestDesc, { messageRequest: { case: "listServices", value: "" } });
      yield create(requestDesc, {
        messageRequest: { case: "fileContainingSymbol", value: "base.v1.Permission.Check" },
      });
    }
    const answers = [];
    for await (const answer of reflection.serverReflectionInfo(requests())) answers.push(answer);
    expect(answers[0]!.messageResponse.value.service!.map((s) => s.name)).toEqual([
      "base.v1.Permission",
      "base.v1.Data",
      "base.v1.Schema",
      "base.v1.Bundle",
      "base.v1.Tenancy",
      "base.v1.Watch",
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ]);
    const files = answers[1]!.messageResponse.value.fileDescriptorProto!.map(
      (bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name,
    );
    expect(files[0]).toBe("base/v1/service.proto");
    expect(files).toContain("base/v1/base.proto");
    expect(files).toContain("google/protobuf/any.proto");
  });
});

describe("TLS on the gRPC port", () => {
  it("--grpc-tls-cert and --grpc-tls-key: permify-node with the certificate as its root connects", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pemba-grpc-tls-"));
    const cert = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-keyout",
        key,
        "-out",
        cert,
      ],
      { stdio: "ignore" },
    );
    const port = await freePort();
    const tls = await startServe([
      "--database",
      "memory:",
      "--grpc-port",
      String(port),
      "--grpc-tls-cert",
      cert,
      "--grpc-tls-key",
      key,
    ]);
    try {
      const line = await tls.waitForLog((e) => typeof e.grpc === "string");
      expect(line.tls).toBe(true);
      const secure = permifyClient(`localhost:${port}`, undefined, readFileSync(cert));
      const listed = await secure.tenancy.list({ pageSize: 10, continuousToken: "" });
      expect(listed.tenants.map((t: { id: string }) => t.id)).toEqual(["t1"]);
      // a cleartext client gets no answer from a TLS port
      const plain = await statusOf(permifyClient(`localhost:${port}`).tenancy.list({ pageSize: 1 }));
      expect(plain.code).toBe(14);
    } finally {
      tls.child.kill("SIGTERM");
      await tls.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
