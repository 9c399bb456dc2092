/**
 * Traces through a real OpenTelemetry Collector: `pemba serve` (the bundled CLI) exports to the collector's OTLP/HTTP
 * receiver; the collector's otlphttp exporter forwards what it received to an OTLP/HTTP receiver in this test, which
 * reads the trace back and checks its span tree. The collector is the project's build (scripts/otelcol: the
 * collector's Go modules), started by scripts/otelcol/run.sh, which builds it when it is not built yet (.ci/run
 * builds it first); PEMBA_OTELCOL names a binary to use instead. Without one (no Go, a failed build) the test fails
 * saying "real collector NOT verified".
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "@pemba/core/testing/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, REPO_DIR, startServe } from "../src/testing/cli-process.ts";
import { checkBody, tuple, writeSchema, writeTuples } from "./api-client.ts";

const RUN_SCRIPT = join(REPO_DIR, "scripts/otelcol/run.sh");
const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN = "b7ad6b7169203331";
const CHECK_ROUTE = "/v1/tenants/:tenant_id/permissions/check";
/** The collector's first build compiles a few hundred Go packages. */
const COLLECTOR_START_MS = 840_000;

let dir: string;
let receiver: OtlpReceiver;
let collector: ChildProcess | undefined;
let collectorUrl = "";
let collectorLog = "";

/** Starts the collector; resolves when it says it is ready, rejects with its output when it exits first. */
async function startCollector(): Promise<void> {
  const port = await freePort();
  collectorUrl = `http://127.0.0.1:${port}`;
  const config = join(dir, "collector.yaml");
  writeFileSync(
    config,
    [
      "receivers:",
      "  otlp:",
      "    protocols:",
      "      http:",
      `        endpoint: 127.0.0.1:${port}`,
      "exporters:",
      "  otlphttp:",
      `    endpoint: ${receiver.url}`,
      "    encoding: json",
      "    compression: none",
      "    retry_on_failure:",
      "      enabled: false",
      "    sending_queue:",
      "      enabled: false",
      "service:",
      "  telemetry:",
      "    metrics:",
      "      level: none",
      "  pipelines:",
      "    traces:",
      "      receivers: [otlp]",
      "      exporters: [otlphttp]",
      "",
    ].join("\n"),
  );
  const child = spawn("bash", [RUN_SCRIPT, config], { stdio: ["ignore", "pipe", "pipe"] });
  collector = child;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(notVerified("not ready in time")), COLLECTOR_START_MS);
    const onOutput = (chunk: Buffer) => {
      collectorLog += chunk.toString();
      if (collectorLog.includes("Everything is ready")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", onOutput);
    child.stderr!.on("data", onOutput);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(notVerified(`the collector (or its build) exited with ${code}`));
    });
  });
}

const notVerified = (why: string) =>
  new Error(`real collector NOT verified: ${why} (scripts/otelcol/run.sh)\n${collectorLog.slice(-4000)}`);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pemba-otelcol-"));
  receiver = await startOtlpReceiver();
  await startCollector();
}, COLLECTOR_START_MS + 10_000);

afterAll(async () => {
  if (collector !== undefined && collector.exitCode === null) {
    const exited = new Promise((resolve) => collector!.once("exit", resolve));
    collector.kill("SIGTERM");
    await exited;
  }
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Stops `pemba serve` (SIGTERM: it exports what its batch span processor still holds). */
async function stop(server: CliProcess): Promise<void> {
  server.child.kill("SIGTERM");
  const result = await server.exited;
  expect(result.code).toBe(0);
}

/** Waits until the collector has forwarded spans of the trace that satisfy `done` (it sends on, asynchronously). */
async function forwarded(traceId: string, done: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
  for (let i = 0; i < 600; i++) {
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    if (done(spans)) return spans;
    if (collector?.exitCode !== null) throw notVerified("the collector exited");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the collector forwarded no complete trace ${traceId}\n${collectorLog.slice(-4000)}`);
}

describe("a real OpenTelemetry Collector", () => {
  it("receives a traced check from pemba serve; the forwarded trace has the span tree under the caller's span", async () => {
    const server = await startServe([
      "--database",
      join(dir, "pemba.db"),
      "--otel-endpoint",
      collectorUrl,
      "--otel-sample-ratio",
      "0",
    ]);
    let stopped = false;
    try {
      await writeSchema(server.url);
      await writeTuples(server.url, [
        tuple("document:1", "owner", "user:alice"),
        tuple("document:1", "viewer", "user:bob"),
      ]);
      const res = await fetch(`${server.url}/v1/tenants/t1/permissions/check`, {
        method: "POST",
        headers: { "content-type": "application/json", traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
        body: JSON.stringify(checkBody("document:1", "view", "user:bob")),
      });
      expect(((await res.json()) as { can: string }).can).toBe("CHECK_RESULT_ALLOWED");
      await stop(server);
      stopped = true;
    } finally {
      if (!stopped) server.child.kill("SIGKILL");
    }

    const spans = await forwarded(TRACE_ID, (s) => s.some((x) => x.parentSpanId === CALLER_SPAN));
    // ratio 0: the writes (no traceparent) were not traced; only the check, which the caller sampled
    expect(receiver.spans.every((s) => s.traceId === TRACE_ID)).toBe(true);
    const request = spans.find((s) => s.parentSpanId === CALLER_SPAN)!;
    expect(request.name).toBe(`POST ${CHECK_ROUTE}`);
    expect(request.kind).toBe(2); // SERVER
    expect(request.resource["service.name"]).toBe("pemba");
    expect(request.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": CHECK_ROUTE,
      "http.response.status_code": 200,
      "pemba.tenant": "t1",
      "pemba.decision": "CHECK_RESULT_ALLOWED",
    });
    const schema = spans.filter((s) => s.name === "pemba.schema.resolve");
    expect(schema).toHaveLength(1);
    expect(schema[0]!.parentSpanId).toBe(request.spanId);
    const evaluation = spans.filter((s) => s.name === "pemba.evaluate");
    expect(evaluation).toHaveLength(1);
    expect(evaluation[0]!.parentSpanId).toBe(request.spanId);
    expect(evaluation[0]!.attributes).toMatchObject({
      "pemba.operation": "check",
      "pemba.permission": "view",
      "pemba.entity.type": "document",
      "pemba.decision": "CHECK_RESULT_ALLOWED",
    });
    const store = spans.filter((s) => s.name === "pemba.store");
    expect(store.length).toBeGreaterThan(0);
    for (const s of store) {
      expect(s.parentSpanId).toBe(evaluation[0]!.spanId);
      expect(typeof s.attributes["pemba.store.statement"]).toBe("string");
      expect(typeof s.attributes["pemba.store.replica"]).toBe("boolean");
    }
    // the walk read document:1's owner and viewer tuples
    expect(store.reduce((n, s) => n + (s.attributes["pemba.store.rows"] as number), 0)).toBe(2);
    // every span of the trace is one of the four kinds, each under its parent
    expect(spans).toHaveLength(2 + 1 + store.length);
  });
});
