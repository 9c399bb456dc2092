/**
 * The Worker's traces and decision log (README, "Tracing and the decision log"): core's spans through the
 * OpenTelemetry SDK, exported as OTLP/HTTP JSON with fetch (@opentelemetry/otlp-transformer's serializer), and the
 * decision records as JSON lines on console.log. Both leave the isolate after the response, under ctx.waitUntil:
 * Workers allow I/O only within a request, so nothing is sent on a timer.
 */
import { type Context, ROOT_CONTEXT, type TextMapGetter } from "@opentelemetry/api";
import { type ExportResult, ExportResultCode, W3CTraceContextPropagator } from "@opentelemetry/core";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOnSampler,
  ParentBasedSampler,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { ConfigError, DecisionLog, type Observability, orderedRecord } from "@pemba/core";
import type { WorkerConfig } from "./config.ts";

/**
 * Finished spans, held until the request's response is out; then sent in one POST (JSON: no protobuf code in the
 * bundle). Spans of concurrent requests of the isolate share the batch.
 */
export class FetchSpanExporter implements SpanExporter {
  readonly #url: string;
  readonly #headers: Record<string, string>;
  #spans: ReadableSpan[] = [];

  constructor(url: string, headers: Record<string, string>) {
    this.#url = url;
    this.#headers = headers;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    for (const span of spans) this.#spans.push(span);
    done({ code: ExportResultCode.SUCCESS });
  }

  /** Sends the spans held; a failed export is reported on console.warn and dropped. */
  async send(): Promise<void> {
    if (this.#spans.length === 0) return;
    const spans = this.#spans;
    this.#spans = [];
    try {
      const res = await fetch(this.#url, {
        method: "POST",
        headers: { "content-type": "application/json", ...this.#headers },
        body: JsonTraceSerializer.serializeRequest(spans),
      });
      await res.body?.cancel();
      if (!res.ok)
        console.warn(JSON.stringify({ level: "warn", msg: "trace export failed", status: res.status }));
    } catch (error) {
      console.warn(JSON.stringify({ level: "warn", msg: "trace export failed", error: String(error) }));
    }
  }

  async shutdown(): Promise<void> {
    await this.send();
  }

  forceFlush(): Promise<void> {
    return this.send();
  }
}

const headerGetter: TextMapGetter<Record<string, string | undefined>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

export interface WorkerObservability extends Observability {
  /** What the request left to send (spans, decision lines), for ctx.waitUntil after its response. */
  afterResponse(): Promise<void>;
}

/** Tracing and the decision log as the Worker's settings ask; undefined when both are off. */
export function workerObservability(config: WorkerConfig): WorkerObservability | undefined {
  const log = config.decisionLog;
  if (log !== undefined && log !== "console" && log !== "off") {
    throw new ConfigError(
      `PEMBA_DECISION_LOG "${log}": a Worker writes the decision log to "console" (or "off")`,
    );
  }
  const decisionsOn = log === "console";
  if (config.otelEndpoint === undefined && !decisionsOn) return undefined;
  let exporter: FetchSpanExporter | undefined;
  let tracing: Observability["tracing"];
  if (config.otelEndpoint !== undefined) {
    exporter = new FetchSpanExporter(
      `${config.otelEndpoint.replace(/\/+$/, "")}/v1/traces`,
      Object.fromEntries(config.otelHeaders ?? []),
    );
    const provider = new TracerProvider({
      resource: resourceFromAttributes({ "service.name": "pemba", "cloud.provider": "cloudflare" }),
      // roots are sampled by `sampleRoot` before the span starts: every root that gets here is recorded
      sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    const propagator = new W3CTraceContextPropagator();
    const ratio = config.otelSampleRatio ?? 1;
    tracing = {
      tracer: provider.getTracer("pemba"),
      extract(traceparent, tracestate): Context {
        if (traceparent === undefined) return ROOT_CONTEXT;
        return propagator.extract(ROOT_CONTEXT, { traceparent, tracestate }, headerGetter);
      },
      sampleRoot: () => Math.random() < ratio,
    };
  }
  const decisions = decisionsOn
    ? new DecisionLog({
        // one console.log per record: Workers Logs indexes each line's fields
        sink: (records) => {
          for (const record of records) console.log(JSON.stringify(orderedRecord(record)));
        },
        sampleRatio: config.decisionLogSampleRatio,
        alwaysDenials: config.decisionLogDenials,
        redact: config.decisionLogRedact,
        // flushed after each response (afterResponse), not on a timer
        schedule: () => {},
      })
    : undefined;
  return {
    tracing,
    decisions,
    async afterResponse() {
      await decisions?.flush();
      await exporter?.send();
    },
  };
}
