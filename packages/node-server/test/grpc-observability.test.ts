/**
 * Traces and decision records of gRPC calls: Permify's own Node client (@permify/permify-node) against
 * `pemba serve --grpc-port`, with a W3C `traceparent` in the call's metadata. The call's request span joins the
 * caller's trace (its spans read back by an OTLP/HTTP receiver in the test) and each decision is logged with that
 * trace id, as over HTTP.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, type OtlpReceiver, startOtlpReceiver } from "@pemba/core/testing/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, startServe } from "../src/testing/cli-process.ts";
import { post, tuple } from "./api-client.ts";
import { type Loose, permifyClient } from "./permify-node.ts";

/** nice-grpc's Metadata, as @permify/permify-node's own interceptors build it. */
const { Metadata } = createRequire(createRequire(import.meta.url).resolve("@permify/permify-node"))(
  "nice-grpc-common",
) as { Metadata: (init?: Record<string, string>) => unknown };

const KEY = "grpc-observe-key";
const KEY_NAME = `key:${createHash("sha256").update(KEY).digest("hex").slice(0, 8)}`;
const CALLER_SPAN = "53995c3f42cd8ad8";
const CHECK_TRACE = "2c56e5a1b7a04d22b2ac1e3f7e6d9a10";
const LOOKUP_TRACE = "3d67f6b2c8b15e33c3bd2f4f8f7eab21";
const SCHEMA = `entity user {}
entity document {
  relation owner @user
  relation viewer @user
  permission view = owner or viewer
}
`;

let dir: string;
let receiver: OtlpReceiver;
let server: CliProcess & { url: string };
let client: Loose;
let file: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pemba-grpc-observe-"));
  receiver = await startOtlpReceiver();
  file = join(dir, "decisions.ndjson");
  server = await startServe([
    "--database",
    "memory:",
    "--grpc-port",
    String(await freePort()),
    "--auth-keys",
    KEY,
    "--decision-log",
    file,
    "--otel-endpoint",
    receiver.url,
    "--otel-sample-ratio",
    "0",
  ]);
  const line = await server.waitForLog((e) => typeof e.grpc === "string");
  client = permifyClient(line.grpc as string, KEY);
  const auth = { authorization: `Bearer ${KEY}` };
  expect((await post(server.url, "/v1/tenants/t1/schemas/write", { schema: SCHEMA }, auth)).status).toBe(200);
  const tuples = [
    tuple("document:1", "owner", "user:alice"),
    tuple("document:1", "viewer", "user:bob"),
    tuple("document:2", "viewer", "user:bob"),
  ];
  expect((await post(server.url, "/v1/tenants/t1/data/write", { metadata: {}, tuples }, auth)).status).toBe(
    200,
  );
}, 60_000);

afterAll(async () => {
  if (server !== undefined && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

const withTrace = (traceId: string) => ({
  metadata: Metadata({ traceparent: `00-${traceId}-${CALLER_SPAN}-01` }),
});
const META = { snapToken: "", schemaVersion: "", depth: 20 };

describe("gRPC calls with a traceparent in their metadata", () => {
  it("a check and a lookup join the caller's traces, and their decisions are logged with the trace ids", async () => {
    const checked = await client.permission.check(
      {
        tenantId: "t1",
        metadata: META,
        entity: { type: "document", id: "1" },
        permission: "view",
        subject: { type: "user", id: "bob", relation: "" },
      },
      withTrace(CHECK_TRACE),
    );
    expect(checked.can).toBe(1); // CHECK_RESULT_ALLOWED
    const looked = await client.permission.lookupEntity(
      {
        tenantId: "t1",
        metadata: META,
        entityType: "document",
        permission: "view",
        subject: { type: "user", id: "bob", relation: "" },
        pageSize: 10,
        continuousToken: "",
      },
      withTrace(LOOKUP_TRACE),
    );
    expect([...looked.entityIds].sort()).toEqual(["1", "2"]);
    // a check without a traceparent at ratio 0: not traced, still logged
    const untraced = await client.permission.check({
      tenantId: "t1",
      metadata: META,
      entity: { type: "document", id: "2" },
      permission: "view",
      subject: { type: "user", id: "alice", relation: "" },
    });
    expect(untraced.can).toBe(2); // CHECK_RESULT_DENIED

    server.child.kill("SIGTERM");
    expect((await server.exited).code).toBe(0);

    // every span came from the two traced calls
    expect(new Set(receiver.spans.map((s) => s.traceId))).toEqual(new Set([CHECK_TRACE, LOOKUP_TRACE]));
    for (const [traceId, operation, route] of [
      [CHECK_TRACE, "check", "check"],
      [LOOKUP_TRACE, "lookup_entity", "lookup-entity"],
    ] as const) {
      const spans = receiver.spans.filter((s) => s.traceId === traceId);
      const request = spans.filter((s) => s.parentSpanId === CALLER_SPAN);
      expect(request).toHaveLength(1);
      // named after the HTTP route the RPC shares
      expect(request[0]!.name).toBe(`POST /v1/tenants/:tenant_id/permissions/${route}`);
      expect(request[0]!.kind).toBe(2); // SERVER
      expect(request[0]!.attributes["pemba.tenant"]).toBe("t1");
      const evaluation = spans.filter((s) => s.name === "pemba.evaluate");
      expect(evaluation).toHaveLength(1);
      expect(evaluation[0]!.parentSpanId).toBe(request[0]!.spanId);
      expect(evaluation[0]!.attributes["pemba.operation"]).toBe(operation);
      const store = spans.filter((s) => s.name === "pemba.store");
      expect(store.length).toBeGreaterThan(0);
      for (const s of store) expect(s.parentSpanId).toBe(evaluation[0]!.spanId);
    }
    expect(
      receiver.spans.find((s) => s.traceId === CHECK_TRACE && s.parentSpanId === CALLER_SPAN)!.attributes[
        "pemba.decision"
      ],
    ).toBe("CHECK_RESULT_ALLOWED");

    const records = readFileSync(file, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records).toHaveLength(3);
    expect(records[0]).toMatchObject({
      api: "check",
      tenant: "t1",
      principal: KEY_NAME,
      subject: "user:bob",
      permission: "view",
      entity: "document:1",
      decision: "CHECK_RESULT_ALLOWED",
      trace_id: CHECK_TRACE,
      depth: 20,
    });
    expect(records[1]).toMatchObject({
      api: "lookup_entity",
      principal: KEY_NAME,
      subject: "user:bob",
      permission: "view",
      entity: "document",
      decision: "LOOKUP",
      count: 2,
      trace_id: LOOKUP_TRACE,
    });
    expect([...(records[1]!.ids as string[])].sort()).toEqual(["1", "2"]);
    expect(records[2]).toMatchObject({
      api: "check",
      subject: "user:alice",
      entity: "document:2",
      decision: "CHECK_RESULT_DENIED",
      trace_id: "",
    });
    for (const r of records) {
      expect(r.snap_token).not.toBe("");
      expect(r.schema_version).not.toBe("");
    }
  });
});
