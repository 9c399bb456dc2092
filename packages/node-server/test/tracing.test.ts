/**
 * Traces of the Node server, read back by an OTLP/HTTP receiver in the test: a check joins the caller's
 * `traceparent`, and its span tree is request -> schema resolution, evaluation -> store round trips.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "@pemba/core/testing/node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../src/index.ts";
import { checkBody, post, tuple, writeSchema, writeTuples } from "./api-client.ts";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const traceparent = (flags = "01") => `00-${TRACE_ID}-${CALLER_SPAN}-${flags}`;
const CHECK = "/v1/tenants/t1/permissions/check";

let dir: string;
let receiver: OtlpReceiver;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pemba-tracing-"));
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A server on a fresh SQLite file with a schema and two tuples, traces to the receiver. */
async function tracedServer(options: { replica: boolean; otelSampleRatio?: number }): Promise<RunningServer> {
  const server = await startServer({
    database: join(dir, `${Math.random().toString(36).slice(2)}.db`),
    logger: pino({ level: "silent" }),
    otelEndpoint: receiver.url,
    ...options,
  });
  await writeSchema(server.url);
  await writeTuples(server.url, [
    tuple("document:1", "owner", "user:alice"),
    tuple("document:1", "viewer", "user:bob"),
  ]);
  return server;
}

/** The spans of the trace, after the server has flushed them (close: the batch processor exports the rest). */
async function traceOf(server: RunningServer, traceId: string): Promise<ReceivedSpan[]> {
  await server.close();
  return receiver.spans.filter((s) => s.traceId === traceId);
}

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe("traces of a check", () => {
  it("over SQL: the request joins the caller's trace; schema, evaluation and store spans under it", async () => {
    const server = await tracedServer({ replica: false });
    const res = await fetch(`${server.url}${CHECK}`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: traceparent() },
      body: JSON.stringify(checkBody("document:1", "view", "user:bob")),
    });
    expect(res.status).toBe(200);
    const spans = await traceOf(server, TRACE_ID);

    const [request] = byName(spans, `POST ${"/v1/tenants/:tenant_id/permissions/check"}`);
    expect(request).toBeDefined();
    expect(request!.parentSpanId).toBe(CALLER_SPAN);
    expect(request!.kind).toBe(2); // SERVER
    expect(request!.resource["service.name"]).toBe("pemba");
    expect(request!.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/tenants/:tenant_id/permissions/check",
      "http.response.status_code": 200,
      "pemba.tenant": "t1",
      "pemba.decision": "CHECK_RESULT_ALLOWED",
    });

    const [schema] = byName(spans, "pemba.schema.resolve");
    expect(schema!.parentSpanId).toBe(request!.spanId);
    expect(typeof schema!.attributes["pemba.schema.version"]).toBe("string");

    const [evaluation] = byName(spans, "pemba.evaluate");
    expect(evaluation!.parentSpanId).toBe(request!.spanId);
    expect(evaluation!.attributes).toMatchObject({
      "pemba.operation": "check",
      "pemba.permission": "view",
      "pemba.entity.type": "document",
      "pemba.decision": "CHECK_RESULT_ALLOWED",
      "pemba.check_count": expect.any(Number),
      "pemba.snap": schema!.attributes["pemba.snap"],
    });

    const store = byName(spans, "pemba.store");
    expect(store.length).toBeGreaterThan(0);
    for (const s of store) {
      expect(s.parentSpanId).toBe(evaluation!.spanId);
      expect(s.attributes["pemba.store.replica"]).toBe(false);
      expect(typeof s.attributes["pemba.store.statement"]).toBe("string");
      expect(typeof s.attributes["pemba.store.rows"]).toBe("number");
    }
    // the rows the walk read: document:1's owner and viewer tuples
    expect(store.reduce((n, s) => n + (s.attributes["pemba.store.rows"] as number), 0)).toBe(2);
  });

  it("with the replica: the store spans say whether the replica's working set answered (keys not held yet: no)", async () => {
    const server = await tracedServer({ replica: true });
    const ids = ["5bf92f3577b34da6a3ce929d0e0e4736", "5bf92f3577b34da6a3ce929d0e0e4737"];
    for (const traceId of ids) {
      await fetch(`${server.url}${CHECK}`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
        body: JSON.stringify(checkBody("document:1", "view", "user:carol")),
      });
    }
    await traceOf(server, ids[0]!);
    const replicaFlags = (traceId: string) => {
      const spans = receiver.spans.filter((s) => s.traceId === traceId);
      expect(byName(spans, "pemba.evaluate")[0]!.attributes["pemba.decision"]).toBe("CHECK_RESULT_DENIED");
      const store = byName(spans, "pemba.store");
      expect(store.length).toBeGreaterThan(0);
      return store.map((s) => s.attributes["pemba.store.replica"]);
    };
    // the first check reads its keys from SQLite (and they join the working set); the same check again reads none
    expect(replicaFlags(ids[0]!).every((r) => r === false)).toBe(true);
    expect(replicaFlags(ids[1]!).every((r) => r === true)).toBe(true);
  });

  it("AuthZEN: an evaluation and a batch of evaluations have the same span tree", async () => {
    const server = await tracedServer({ replica: false });
    const single = "9af92f3577b34da6a3ce929d0e0e4736";
    const batch = "aaf92f3577b34da6a3ce929d0e0e4736";
    const authzen = (path: string, traceId: string, body: unknown) =>
      fetch(`${server.url}/v1/tenants/t1/access/v1/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
        body: JSON.stringify(body),
      });
    const bob = { type: "user", id: "bob" };
    const evaluated = await authzen("evaluation", single, {
      subject: bob,
      action: { name: "view" },
      resource: { type: "document", id: "1" },
    });
    expect(await evaluated.json()).toEqual({ decision: true });
    const many = await authzen("evaluations", batch, {
      subject: bob,
      action: { name: "view" },
      evaluations: [{ resource: { type: "document", id: "1" } }, { resource: { type: "document", id: "2" } }],
    });
    expect(await many.json()).toEqual({ evaluations: [{ decision: true }, { decision: false }] });
    await server.close();
    for (const [traceId, operation] of [
      [single, "authzen_evaluation"],
      [batch, "authzen_evaluations"],
    ] as const) {
      const spans = receiver.spans.filter((s) => s.traceId === traceId);
      const request = spans.filter((s) => s.parentSpanId === CALLER_SPAN);
      expect(request).toHaveLength(1);
      const [schema] = byName(spans, "pemba.schema.resolve");
      expect(schema!.parentSpanId).toBe(request[0]!.spanId);
      const [evaluation] = byName(spans, "pemba.evaluate");
      expect(evaluation!.parentSpanId).toBe(request[0]!.spanId);
      expect(evaluation!.attributes["pemba.operation"]).toBe(operation);
      expect(evaluation!.attributes["pemba.snap"]).toBe(schema!.attributes["pemba.snap"]);
      const store = byName(spans, "pemba.store");
      expect(store.length).toBeGreaterThan(0);
      for (const s of store) expect(s.parentSpanId).toBe(evaluation!.spanId);
    }
    const decided = receiver.spans.find((s) => s.traceId === single && s.name === "pemba.evaluate");
    expect(decided!.attributes["pemba.decision"]).toBe("CHECK_RESULT_ALLOWED");
  });

  it("an error answer: the request span carries the status and Permify's error code", async () => {
    const server = await tracedServer({ replica: false });
    const traceId = "6bf92f3577b34da6a3ce929d0e0e4736";
    const res = await fetch(`${server.url}/v1/tenants/nobody/permissions/check`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
      body: JSON.stringify(checkBody("document:1", "view", "user:bob")),
    });
    expect(res.status).toBe(404);
    const spans = await traceOf(server, traceId);
    const request = spans.find((s) => s.parentSpanId === CALLER_SPAN);
    expect(request!.attributes).toMatchObject({
      "http.response.status_code": 404,
      "pemba.tenant": "nobody",
      "pemba.error_code": "ERROR_CODE_SCHEMA_NOT_FOUND",
    });
    expect(request!.status.code).toBe(2); // ERROR
    // the failing step: schema resolution, failed with the same code
    expect(byName(spans, "pemba.schema.resolve")[0]!.attributes["pemba.error_code"]).toBe(
      "ERROR_CODE_SCHEMA_NOT_FOUND",
    );
  });

  it("sampling: ratio 0 traces no new request, but follows a caller that sampled; a malformed traceparent is ignored", async () => {
    const server = await tracedServer({ replica: false, otelSampleRatio: 0 });
    const before = receiver.spans.length;
    const body = JSON.stringify(checkBody("document:1", "view", "user:bob"));
    await post(server.url, CHECK, JSON.parse(body));
    const traceId = "7bf92f3577b34da6a3ce929d0e0e4736";
    await fetch(`${server.url}${CHECK}`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
      body,
    });
    const unsampled = "8bf92f3577b34da6a3ce929d0e0e4736";
    await fetch(`${server.url}${CHECK}`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${unsampled}-${CALLER_SPAN}-00` },
      body,
    });
    // a malformed traceparent (an all-zero parent span id) is ignored: sampled as a request without one
    await fetch(`${server.url}${CHECK}`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${unsampled}-0000000000000000-01` },
      body,
    });
    await server.close();
    const received = receiver.spans.slice(before);
    expect(new Set(received.map((s) => s.traceId))).toEqual(new Set([traceId]));
  });
});
