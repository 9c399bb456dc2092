/**
 * The decision log of the Node server: a record per decision with every field, sampling and "always record
 * denials", redaction, the file's rotation, a full buffer (records dropped and counted, decisions unaffected) and
 * the OTLP logs sink.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type OtlpReceiver, startOtlpReceiver } from "@pemba/core/testing/node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../src/index.ts";
import { RotatingFile } from "../src/observability.ts";
import { checkBody, post, tuple } from "./api-client.ts";

const SCHEMA = `entity user {}
entity document {
  relation owner @user
  relation viewer @user
  permission edit = owner
  permission view = owner or viewer
}
`;
const KEY = { authorization: "Bearer secret1" };
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
/** `key:` and the first 8 hex digits of the key's SHA-256. */
const KEY_NAME = `key:${createHash("sha256").update("secret1").digest("hex").slice(0, 8)}`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pemba-decisions-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Options = Parameters<typeof startServer>[0];

/** A server with a key, a schema and data, logging decisions to a new file. */
async function loggingServer(options: Options = {}): Promise<{ server: RunningServer; file: string }> {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.ndjson`);
  const server = await startServer({
    database: "memory:",
    logger: pino({ level: "silent" }),
    auth: { mode: "preshared", keys: [{ key: "secret1" }] },
    decisionLog: file,
    ...options,
  });
  expect((await post(server.url, "/v1/tenants/t1/schemas/write", { schema: SCHEMA }, KEY)).status).toBe(200);
  const written = await post(
    server.url,
    "/v1/tenants/t1/data/write",
    {
      metadata: {},
      tuples: [
        tuple("document:1", "owner", "user:alice"),
        tuple("document:1", "viewer", "user:bob"),
        tuple("document:2", "viewer", "user:bob"),
      ],
    },
    KEY,
  );
  expect(written.status).toBe(200);
  return { server, file };
}

/** The file's records once the server has closed (the log flushes on close). */
async function recordsOf(server: RunningServer, file: string): Promise<Record<string, unknown>[]> {
  await server.close();
  return readFileSync(file, "utf8")
    .trimEnd()
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const call = (server: RunningServer, path: string, body: unknown, headers: Record<string, string> = {}) =>
  post(server.url, `/v1/tenants/t1/permissions/${path}`, body, { ...KEY, ...headers });

describe("decision records", () => {
  it("a check: every field, in order", async () => {
    const { server, file } = await loggingServer();
    const before = Date.now();
    const r = await call(server, "check", checkBody("document:1", "view", "user:bob"), {
      traceparent: TRACEPARENT,
    });
    expect(r.body.can).toBe("CHECK_RESULT_ALLOWED");
    const after = Date.now();
    const [record, ...rest] = await recordsOf(server, file);
    expect(rest).toEqual([]);
    expect(Object.keys(record!)).toEqual([
      "time",
      "api",
      "tenant",
      "principal",
      "subject",
      "permission",
      "entity",
      "decision",
      "snap_token",
      "schema_version",
      "check_count",
      "latency_ms",
      "trace_id",
      "depth",
    ]);
    expect(record).toMatchObject({
      api: "check",
      tenant: "t1",
      principal: KEY_NAME,
      subject: "user:bob",
      permission: "view",
      entity: "document:1",
      decision: "CHECK_RESULT_ALLOWED",
      check_count: (r.body.metadata as { check_count: number }).check_count,
      trace_id: TRACE_ID,
      depth: 20,
    });
    const time = Date.parse(record!.time as string);
    expect(time).toBeGreaterThanOrEqual(before);
    expect(time).toBeLessThanOrEqual(after);
    expect(record!.latency_ms).toBeGreaterThan(0);
    expect(record!.snap_token).toMatch(/.+/);
    expect(record!.schema_version).toMatch(/.+/);
  });

  it("bulk check (a record per item), explain, lookups (count and first ids), subject permission", async () => {
    const { server, file } = await loggingServer();
    const subject = { type: "user", id: "bob", relation: "" };
    const item = (id: string, permission: string) => ({
      entity: { type: "document", id },
      permission,
      subject,
    });
    await call(server, "bulk-check", {
      metadata: { depth: 20 },
      items: [item("1", "view"), item("1", "edit")],
    });
    await call(server, "explain", checkBody("document:2", "view", "user:bob"));
    await call(server, "lookup-entity", {
      metadata: { depth: 20 },
      entity_type: "document",
      permission: "view",
      subject,
    });
    await call(server, "lookup-subject", {
      metadata: { depth: 20 },
      entity: { type: "document", id: "1" },
      permission: "view",
      subject_reference: { type: "user", relation: "" },
    });
    await call(server, "subject-permission", {
      metadata: { depth: 20, only_permission: true },
      entity: { type: "document", id: "1" },
      subject,
    });
    const records = await recordsOf(server, file);
    const brief = records.map((r) => [r.api, r.subject, r.permission, r.entity, r.decision, r.count, r.ids]);
    expect(brief).toEqual([
      ["bulk_check", "user:bob", "view", "document:1", "CHECK_RESULT_ALLOWED", undefined, undefined],
      ["bulk_check", "user:bob", "edit", "document:1", "CHECK_RESULT_DENIED", undefined, undefined],
      ["explain", "user:bob", "view", "document:2", "CHECK_RESULT_ALLOWED", undefined, undefined],
      ["lookup_entity", "user:bob", "view", "document", "LOOKUP", 2, ["1", "2"]],
      ["lookup_subject", "user", "view", "document:1", "LOOKUP", 2, ["alice", "bob"]],
      ["subject_permission", "user:bob", "edit", "document:1", "CHECK_RESULT_DENIED", undefined, undefined],
      ["subject_permission", "user:bob", "view", "document:1", "CHECK_RESULT_ALLOWED", undefined, undefined],
    ]);
    for (const r of records) {
      expect(r.principal).toBe(KEY_NAME);
      expect(r.trace_id).toBe("");
    }
    // the items of one bulk check share its snap and latency
    expect(records[0]!.snap_token).toBe(records[1]!.snap_token);
    expect(records[0]!.latency_ms).toBe(records[1]!.latency_ms);
  });

  it("AuthZEN: each evaluation (single and batched) and action search a record, a search page a lookup record", async () => {
    const { server, file } = await loggingServer();
    const authzen = (path: string, body: unknown) =>
      post(server.url, `/v1/tenants/t1/access/v1/${path}`, body, { ...KEY, traceparent: TRACEPARENT });
    const bob = { type: "user", id: "bob" };
    const doc = (id: string) => ({ type: "document", id });
    expect(
      (await authzen("evaluation", { subject: bob, action: { name: "view" }, resource: doc("1") })).body,
    ).toEqual({ decision: true });
    const batch = await authzen("evaluations", {
      subject: bob,
      evaluations: [
        { action: { name: "edit" }, resource: doc("1") },
        { action: { name: "view" }, resource: doc("2") },
        // refused before any evaluation (no such type): a closed decision, not a decision of the engine
        { action: { name: "view" }, resource: { type: "folder", id: "1" } },
      ],
    });
    expect((batch.body.evaluations as { decision: boolean }[]).map((e) => e.decision)).toEqual([
      false,
      true,
      false,
    ]);
    // deny_on_first_deny: the item after the first deny is not evaluated, so not logged
    await authzen("evaluations", {
      subject: bob,
      action: { name: "edit" },
      evaluations: [{ resource: doc("2") }, { resource: doc("1") }],
      options: { evaluations_semantic: "deny_on_first_deny" },
    });
    await authzen("search/subject", {
      subject: { type: "user" },
      action: { name: "view" },
      resource: doc("1"),
    });
    await authzen("search/resource", {
      subject: bob,
      action: { name: "view" },
      resource: { type: "document" },
    });
    await authzen("search/action", { subject: bob, resource: doc("1") });
    const records = await recordsOf(server, file);
    const brief = records.map((r) => [r.api, r.subject, r.permission, r.entity, r.decision, r.count, r.ids]);
    expect(brief).toEqual([
      ["authzen_evaluation", "user:bob", "view", "document:1", "CHECK_RESULT_ALLOWED", undefined, undefined],
      ["authzen_evaluations", "user:bob", "edit", "document:1", "CHECK_RESULT_DENIED", undefined, undefined],
      ["authzen_evaluations", "user:bob", "view", "document:2", "CHECK_RESULT_ALLOWED", undefined, undefined],
      ["authzen_evaluations", "user:bob", "edit", "document:2", "CHECK_RESULT_DENIED", undefined, undefined],
      ["authzen_subject_search", "user", "view", "document:1", "LOOKUP", 2, ["alice", "bob"]],
      ["authzen_resource_search", "user:bob", "view", "document", "LOOKUP", 2, ["1", "2"]],
      [
        "authzen_action_search",
        "user:bob",
        "edit",
        "document:1",
        "CHECK_RESULT_DENIED",
        undefined,
        undefined,
      ],
      [
        "authzen_action_search",
        "user:bob",
        "view",
        "document:1",
        "CHECK_RESULT_ALLOWED",
        undefined,
        undefined,
      ],
    ]);
    for (const r of records) {
      expect(r).toMatchObject({ tenant: "t1", principal: KEY_NAME, trace_id: TRACE_ID, depth: 50 });
      expect(r.snap_token).toMatch(/.+/);
      expect(r.schema_version).toMatch(/.+/);
      expect(r.latency_ms).toBeGreaterThan(0);
      if (r.decision !== "LOOKUP") expect(r.check_count).toBeGreaterThan(0);
    }
    // one batch's records share its snap and latency
    expect(records[1]!.snap_token).toBe(records[2]!.snap_token);
    expect(records[1]!.latency_ms).toBe(records[2]!.latency_ms);
  });

  it("a request's context is logged as the request gave it", async () => {
    const { server, file } = await loggingServer();
    const context = {
      tuples: [tuple("document:9", "owner", "user:carol")],
      attributes: [],
      data: { ip: "10.0.0.1" },
    };
    const r = await call(server, "check", { ...checkBody("document:9", "view", "user:carol"), context });
    expect(r.body.can).toBe("CHECK_RESULT_ALLOWED");
    const [record] = await recordsOf(server, file);
    expect(record!.context).toEqual(context);
  });
});

describe("sampling and redaction", () => {
  it("ratio 0 records only denials; with denials off, nothing", async () => {
    for (const denials of [true, false]) {
      const { server, file } = await loggingServer({
        decisionLogSampleRatio: 0,
        decisionLogDenials: denials,
      });
      await call(server, "check", checkBody("document:1", "view", "user:alice"));
      await call(server, "check", checkBody("document:1", "edit", "user:bob"));
      await call(server, "check", checkBody("document:2", "view", "user:bob"));
      await server.close();
      const records = existsSync(file) ? await recordsOf(server, file) : [];
      expect(records.map((r) => [r.entity, r.permission, r.decision])).toEqual(
        denials ? [["document:1", "edit", "CHECK_RESULT_DENIED"]] : [],
      );
    }
  });

  it("subject-id: the id is a SHA-256 pseudonym; context: left out", async () => {
    const { server, file } = await loggingServer({ decisionLogRedact: ["subject-id", "context"] });
    const context = { tuples: [], attributes: [], data: { ip: "10.0.0.1" } };
    await call(server, "check", { ...checkBody("document:1", "view", "user:bob"), context });
    const [record] = await recordsOf(server, file);
    const digest = createHash("sha256").update("t1\u0000bob").digest("hex").slice(0, 16);
    expect(record!.subject).toBe(`user:sha256:${digest}`);
    expect(record).not.toHaveProperty("context");
    expect(record!.decision).toBe("CHECK_RESULT_ALLOWED");
  });
});

describe("bounds", () => {
  it("a full buffer drops records and counts them; the decisions are unaffected", async () => {
    const { server, file } = await loggingServer({ decisionLogBuffer: 5 });
    const subject = { type: "user", id: "bob", relation: "" };
    const items = Array.from({ length: 20 }, (_, i) => ({
      entity: { type: "document", id: String((i % 4) + 1) },
      permission: "view",
      subject,
    }));
    // the 20 items are recorded in one turn, before the log's first flush: 5 fit the buffer
    const r = await call(server, "bulk-check", { metadata: { depth: 20 }, items });
    expect((r.body.results as { can: string }[]).map((x) => x.can)).toEqual(
      items.map((i) =>
        i.entity.id === "1" || i.entity.id === "2" ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED",
      ),
    );
    const metrics = await (await fetch(`${server.url}/metrics`, { headers: KEY })).text();
    expect(metrics).toContain("pemba_decision_log_dropped_total 15\n");
    const records = await recordsOf(server, file);
    expect(records.map((x) => x.entity)).toEqual([
      "document:1",
      "document:2",
      "document:3",
      "document:4",
      "document:1",
    ]);
  });

  it("a file rotates by size: <file>.1 the newest, at most 5 kept", async () => {
    const path = join(dir, "rotate.ndjson");
    const file = new RotatingFile(path, 40);
    const line = (n: number) => `${JSON.stringify({ n: String(n).padStart(10, "0") })}\n`; // 19 bytes
    for (let n = 1; n <= 16; n++) await file.write(line(n));
    await file.close();
    // two lines a file: 15-16 current, 13-14 in .1, ..., 5-6 in .5; 1-4 removed
    expect(readFileSync(path, "utf8")).toBe(line(15) + line(16));
    expect(readFileSync(`${path}.1`, "utf8")).toBe(line(13) + line(14));
    expect(readFileSync(`${path}.5`, "utf8")).toBe(line(5) + line(6));
    expect(existsSync(`${path}.6`)).toBe(false);
  });
});

describe("OTLP logs", () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver.close());

  it("--decision-log otlp: a log record per decision, the record as its body", async () => {
    const { server } = await loggingServer({
      decisionLog: "otlp",
      otelEndpoint: receiver.url,
      otelSampleRatio: 0,
    });
    await call(server, "check", checkBody("document:1", "edit", "user:bob"));
    await server.close();
    expect(receiver.logs).toHaveLength(1);
    expect(receiver.logs[0]!.attributes).toEqual({
      "pemba.tenant": "t1",
      "pemba.decision": "CHECK_RESULT_DENIED",
    });
    expect(receiver.logs[0]!.body).toMatchObject({
      api: "check",
      tenant: "t1",
      principal: KEY_NAME,
      subject: "user:bob",
      permission: "edit",
      entity: "document:1",
      decision: "CHECK_RESULT_DENIED",
    });
  });
});
