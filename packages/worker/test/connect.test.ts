/**
 * The Worker's Connect and gRPC-Web answers (the shipped entry and wrangler.toml under `wrangler dev`), from a Node
 * client with @connectrpc/connect-web's fetch transports: the same base.v1 services as the Node server's gRPC port,
 * each answer equal to the HTTP API's answer for the same request, errors as statuses with the HTTP body's code
 * and message.
 */
import { create, type DescMessage, fromJson, type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { grpcTypeRegistry } from "@pemba/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";

const KEY = "connect-test-key";
/** The origin of a page allowed to call the Worker (PEMBA_CORS_ORIGINS). */
const PAGE = "https://console.example";
const SCHEMA = `entity user {}
entity document {
  relation owner @user
  relation viewer @user
  attribute public boolean
  permission view = owner or viewer or public
}
`;

const service = (name: string) => grpcTypeRegistry.getService(`base.v1.${name}`)!;
const desc = (name: string): DescMessage => grpcTypeRegistry.getMessage(`base.v1.${name}`)!;
const asJson = (name: string, message: Parameters<typeof toJson>[1]) =>
  toJson(desc(name), message, { registry: grpcTypeRegistry, useProtoFieldName: true });
/** The HTTP answer read as the proto message (Pemba's extension fields, not in the proto, left out). */
const httpAsJson = (name: string, json: unknown) =>
  asJson(
    name,
    fromJson(desc(name), json as JsonValue, { registry: grpcTypeRegistry, ignoreUnknownFields: true }),
  );

// the services are descriptors found at run time, so their methods are typed here by hand
type Msg = Parameters<typeof toJson>[1];
type CallOptions = { headers: Record<string, string> };
type Unary = (request: object, options: CallOptions) => Promise<Msg>;
type ServerStream = (request: object, options: CallOptions) => AsyncIterable<Msg>;
const clientOf = (name: string, transport: Transport) =>
  createClient(service(name), transport) as unknown as Record<string, Unary>;
const streamsOf = (name: string, transport: Transport) =>
  createClient(service(name), transport) as unknown as Record<string, ServerStream>;
/** The status of a call that must fail. */
async function statusOf(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(error)}`);
  return { code: error.code, message: error.rawMessage };
}

let w: WranglerDev;
const auth = { authorization: `Bearer ${KEY}` };
const transports: [string, () => Transport][] = [
  // Connect in its JSON encoding, gRPC-Web in binary: both encodings of the same messages
  ["Connect", () => createConnectTransport({ baseUrl: w.url, jsonOptions: { registry: grpcTypeRegistry } })],
  ["gRPC-Web", () => createGrpcWebTransport({ baseUrl: w.url })],
];

async function http(path: string, body: unknown): Promise<unknown> {
  const r = await w.call(path, body, auth);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

beforeAll(async () => {
  w = await startWranglerDev({ PEMBA_DATABASE: "memory:", PEMBA_AUTH_KEYS: KEY, PEMBA_CORS_ORIGINS: PAGE });
  await http("/v1/tenants/t1/schemas/write", { schema: SCHEMA });
  await http("/v1/tenants/t1/data/write", {
    metadata: { schema_version: "" },
    tuples: [
      { entity: { type: "document", id: "d1" }, relation: "owner", subject: { type: "user", id: "alice" } },
      { entity: { type: "document", id: "d2" }, relation: "viewer", subject: { type: "user", id: "alice" } },
    ],
  });
}, 120_000);

afterAll(async () => {
  await w?.close();
});

describe.each(transports)("the Worker over %s", (_name, transport) => {
  it("writes data through the RPC and checks answer as over HTTP", async () => {
    const data = clientOf("Data", transport());
    const written = await data.write!(
      {
        tenantId: "t1",
        metadata: {},
        attributes: [
          {
            entity: { type: "document", id: "d3" },
            attribute: "public",
            value: fromJson(
              grpcTypeRegistry.getMessage("google.protobuf.Any")!,
              { "@type": "type.googleapis.com/base.v1.BooleanValue", data: true },
              { registry: grpcTypeRegistry },
            ),
          },
        ],
      },
      { headers: auth },
    );
    expect(asJson("DataWriteResponse", written)).toMatchObject({ snap_token: expect.any(String) });

    const permission = clientOf("Permission", transport());
    for (const [doc, user, expected] of [
      ["d1", "alice", "CHECK_RESULT_ALLOWED"],
      ["d3", "bob", "CHECK_RESULT_ALLOWED"],
      ["d1", "bob", "CHECK_RESULT_DENIED"],
    ] as const) {
      const request = {
        metadata: { snap_token: "", schema_version: "", depth: 20 },
        entity: { type: "document", id: doc },
        permission: "view",
        subject: { type: "user", id: user },
      };
      const viaRpc = asJson(
        "PermissionCheckResponse",
        await permission.check!(
          fromJson(desc("PermissionCheckRequest"), { tenant_id: "t1", ...request }) as object,
          { headers: auth },
        ),
      );
      expect(viaRpc).toEqual(
        httpAsJson("PermissionCheckResponse", await http("/v1/tenants/t1/permissions/check", request)),
      );
      expect(viaRpc).toMatchObject({ can: expected });
    }
  });

  it("streams lookup entity as the HTTP stream does", async () => {
    const permission = streamsOf("Permission", transport());
    const request = {
      metadata: { snap_token: "", schema_version: "", depth: 20 },
      entity_type: "document",
      permission: "view",
      subject: { type: "user", id: "alice" },
    };
    const streamed = [];
    const call = permission.lookupEntityStream!(
      fromJson(desc("PermissionLookupEntityRequest"), { tenant_id: "t1", ...request }),
      { headers: auth },
    );
    for await (const message of call) {
      streamed.push(asJson("PermissionLookupEntityStreamResponse", message));
    }
    const res = await fetch(`${w.url}/v1/tenants/t1/permissions/lookup-entity-stream`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify(request),
    });
    const lines = (await res.text())
      .split("\n")
      .filter((l) => l !== "")
      .map((l) =>
        httpAsJson("PermissionLookupEntityStreamResponse", (JSON.parse(l) as { result: unknown }).result),
      );
    expect(streamed).toEqual(lines);
    expect(streamed.map((m) => (m as { entity_id: string }).entity_id).sort()).toEqual(["d1", "d2", "d3"]);
  });

  it("errors: a wrong key and an unknown tenant, with the HTTP body's code and message", async () => {
    const tenancy = clientOf("Tenancy", transport());
    expect(await statusOf(tenancy.list!({}, { headers: { authorization: "Bearer nope" } }))).toEqual({
      code: 16,
      message: "ERROR_CODE_INVALID_KEY",
    });
    const schema = clientOf("Schema", transport());
    const missing = await statusOf(schema.read!({ tenantId: "nobody", metadata: {} }, { headers: auth }));
    const viaHttp = (await w.call("/v1/tenants/nobody/schemas/read", { metadata: {} }, auth)).body as {
      code: number;
      message: string;
    };
    expect(missing).toEqual({ code: viaHttp.code, message: viaHttp.message });
    expect(missing.code).toBe(5);
  });
});

describe("calls from a page of another origin", () => {
  const check = {
    tenantId: "t1",
    metadata: { depth: 20 },
    entity: { type: "document", id: "d1" },
    permission: "view",
    subject: { type: "user", id: "alice" },
  };
  const connectCall = (origin: string) =>
    fetch(`${w.url}/base.v1.Permission/Check`, {
      method: "POST",
      headers: { origin, "content-type": "application/json", "connect-protocol-version": "1", ...auth },
      // Connect's JSON: the proto's JSON names (tenant_id)
      body: JSON.stringify({ ...check, tenantId: undefined, tenant_id: check.tenantId }),
    });
  const corsOf = (r: Response) => ({
    origin: r.headers.get("access-control-allow-origin"),
    credentials: r.headers.get("access-control-allow-credentials"),
    vary: r.headers.get("vary"),
  });

  it("a preflight, then Connect and gRPC-Web answers with the HTTP API's CORS headers and the status headers exposed", async () => {
    const preflight = await fetch(`${w.url}/base.v1.Permission/Check`, {
      method: "OPTIONS",
      headers: {
        origin: PAGE,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,connect-protocol-version,x-grpc-web",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(PAGE);
    expect(preflight.headers.get("access-control-allow-headers")).toBe(
      "authorization,content-type,connect-protocol-version,x-grpc-web",
    );

    const httpAnswer = await fetch(`${w.url}/v1/tenants/t1/permissions/check`, {
      method: "POST",
      headers: { origin: PAGE, "content-type": "application/json", ...auth },
      body: JSON.stringify({
        metadata: { depth: 20 },
        entity: check.entity,
        permission: "view",
        subject: check.subject,
      }),
    });
    const connect = await connectCall(PAGE);
    expect(connect.status).toBe(200);
    expect(await connect.json()).toMatchObject({ can: "CHECK_RESULT_ALLOWED" });
    expect(corsOf(connect)).toEqual(corsOf(httpAnswer));
    expect(corsOf(connect)).toEqual({ origin: PAGE, credentials: "true", vary: "Origin" });
    expect(connect.headers.get("access-control-expose-headers")).toBe(
      "grpc-status, grpc-message, grpc-status-details-bin",
    );

    const desc = grpcTypeRegistry.getMessage("base.v1.PermissionCheckRequest")!;
    const bytes = toBinary(desc, create(desc, check as never));
    const frame = new Uint8Array(5 + bytes.length);
    new DataView(frame.buffer).setUint32(1, bytes.length);
    frame.set(bytes, 5);
    const grpcWeb = await fetch(`${w.url}/base.v1.Permission/Check`, {
      method: "POST",
      headers: { origin: PAGE, "content-type": "application/grpc-web+proto", "x-grpc-web": "1", ...auth },
      body: frame,
    });
    expect(grpcWeb.status).toBe(200);
    await grpcWeb.arrayBuffer();
    expect(corsOf(grpcWeb)).toEqual({ origin: PAGE, credentials: "true", vary: "Origin" });
    expect(grpcWeb.headers.get("access-control-expose-headers")).toBe(
      "grpc-status, grpc-message, grpc-status-details-bin",
    );
  });

  it("an origin not allowed is refused as over HTTP, without CORS headers", async () => {
    const refused = await connectCall("https://elsewhere.example");
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: "permission_denied" });
    expect(corsOf(refused)).toEqual({ origin: null, credentials: null, vary: null });
  });
});
