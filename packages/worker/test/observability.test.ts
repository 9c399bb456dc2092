/**
 * The Worker's traces and decision log in workerd (`wrangler dev` on the repository's wrangler.toml, local D1):
 * a check's spans reach an OTLP/HTTP receiver in the test, joined to the caller's `traceparent`, with the store
 * spans under the evaluation; its decision record is a JSON line of the Worker's log output.
 */
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "@pemba/core/testing/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";

const SCHEMA = `entity user {}
entity document {
  relation viewer @user
  permission view = viewer
}
`;
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

async function until<T>(get: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = get();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("Worker traces and decision log (workerd)", () => {
  let receiver: OtlpReceiver;
  let w: WranglerDev;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    w = await startWranglerDev(
      {
        PEMBA_OTEL_ENDPOINT: receiver.url,
        PEMBA_OTEL_HEADERS: "x-api-key=k1",
        PEMBA_DECISION_LOG: "console",
        // every check reads D1 (no replica): the store spans are round trips
        PEMBA_REPLICA: "off",
      },
      90_000,
      undefined,
      "log",
    );
    expect((await w.call("/v1/tenants/t1/schemas/write", { schema: SCHEMA })).status).toBe(200);
    const tuples = [
      {
        entity: { type: "document", id: "1" },
        relation: "viewer",
        subject: { type: "user", id: "bob", relation: "" },
      },
    ];
    expect((await w.call("/v1/tenants/t1/data/write", { metadata: {}, tuples })).status).toBe(200);
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    await receiver?.close();
  });

  it("a check joins the caller's trace: request -> schema resolution, evaluation -> store spans", async () => {
    const r = await w.call(
      "/v1/tenants/t1/permissions/check",
      {
        metadata: { depth: 20 },
        entity: { type: "document", id: "1" },
        permission: "view",
        subject: { type: "user", id: "bob", relation: "" },
      },
      { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
    );
    expect((r.body as { can: string }).can).toBe("CHECK_RESULT_ALLOWED");
    const spans = await until(() => {
      const mine = receiver.spans.filter((s) => s.traceId === TRACE_ID);
      return mine.some((s) => s.name === "pemba.store") && mine.some((s) => s.parentSpanId === CALLER_SPAN)
        ? mine
        : undefined;
    });
    const named = (name: string) => spans.filter((s: ReceivedSpan) => s.name === name);
    const request = spans.find((s) => s.parentSpanId === CALLER_SPAN)!;
    expect(request.name).toBe("POST /v1/tenants/:tenant_id/permissions/check");
    expect(request.resource["service.name"]).toBe("pemba");
    expect(request.attributes).toMatchObject({
      "http.response.status_code": 200,
      "pemba.tenant": "t1",
      "pemba.decision": "CHECK_RESULT_ALLOWED",
    });
    expect(named("pemba.schema.resolve")[0]!.parentSpanId).toBe(request.spanId);
    const evaluation = named("pemba.evaluate")[0]!;
    expect(evaluation.parentSpanId).toBe(request.spanId);
    expect(evaluation.attributes).toMatchObject({
      "pemba.permission": "view",
      "pemba.decision": "CHECK_RESULT_ALLOWED",
    });
    for (const s of named("pemba.store")) {
      expect(s.parentSpanId).toBe(evaluation.spanId);
      expect(s.attributes["pemba.store.replica"]).toBe(false);
    }
    expect(receiver.contentTypes.every((t) => t === "application/json")).toBe(true);
  });

  it("the decision record is a JSON line of the Worker's output", async () => {
    const record = await until(() =>
      w
        .output()
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l.startsWith("{") && l.includes('"snap_token"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((r) => r.trace_id === TRACE_ID),
    );
    expect(record).toMatchObject({
      api: "check",
      tenant: "t1",
      principal: "",
      subject: "user:bob",
      permission: "view",
      entity: "document:1",
      decision: "CHECK_RESULT_ALLOWED",
      trace_id: TRACE_ID,
    });
    expect(typeof record.schema_version).toBe("string");
    expect(typeof record.snap_token).toBe("string");
  });
});
