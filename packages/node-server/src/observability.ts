/**
 * The Node server's tracing and decision log (README, Observability): the OpenTelemetry SDK (a TracerProvider with
 * a ParentBased(TraceIdRatioBased) sampler, a batch span processor, the OTLP/HTTP exporter) behind core's `Tracing`,
 * and the decision log's sinks: NDJSON on stdout or to a file rotated by size, or OpenTelemetry logs over OTLP/HTTP.
 */
import { type FileHandle, open, rename, rm, stat } from "node:fs/promises";
import { type Context, ROOT_CONTEXT, type TextMapGetter } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchLogRecordProcessor, LoggerProvider } from "@opentelemetry/sdk-logs";
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import {
  ConfigError,
  DecisionLog,
  type DecisionRecord,
  type NodeSettings,
  type Observability,
  orderedRecord,
  settingName,
  type Tracing,
  toNdjson,
} from "@pemba/core";

export type ObservabilitySettings = Pick<
  NodeSettings,
  | "otelEndpoint"
  | "otelSampleRatio"
  | "decisionLog"
  | "decisionLogSampleRatio"
  | "decisionLogDenials"
  | "decisionLogRedact"
  | "decisionLogMaxMb"
  | "decisionLogBuffer"
>;

export interface ServerObservability extends Observability {
  /** Sends what is buffered (spans, decision records) and stops the exporters. */
  close(): Promise<void>;
}

const DEFAULT_SERVICE_NAME = "pemba";
/** Longest a decision record waits for its write (records go out in batches, as the request log's lines). */
const DECISION_FLUSH_MS = 50;
/** Rotated decision log files kept: `<file>.1` (newest) to `<file>.5`. */
export const DECISION_LOG_KEEP = 5;

/** The OTLP/HTTP base URL: the setting, else `OTEL_EXPORTER_OTLP_ENDPOINT`; undefined: no OTLP. */
function otlpBase(settings: ObservabilitySettings, env: NodeJS.ProcessEnv): string | undefined {
  const base = settings.otelEndpoint ?? nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  return base?.replace(/\/+$/, "");
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/** `service.name` (OTEL_SERVICE_NAME, default pemba) and OTEL_RESOURCE_ATTRIBUTES. */
function serviceResource(env: NodeJS.ProcessEnv): Resource {
  const attributes: Record<string, string> = {};
  for (const pair of (env.OTEL_RESOURCE_ATTRIBUTES ?? "").split(",")) {
    const eq = pair.indexOf("=");
    if (eq > 0)
      attributes[decodeURIComponent(pair.slice(0, eq).trim())] = decodeURIComponent(
        pair.slice(eq + 1).trim(),
      );
  }
  attributes["service.name"] =
    nonEmpty(env.OTEL_SERVICE_NAME) ?? attributes["service.name"] ?? DEFAULT_SERVICE_NAME;
  return resourceFromAttributes(attributes);
}

/** The sample ratio: the setting, else `OTEL_TRACES_SAMPLER_ARG`, else 1. */
function sampleRatio(settings: ObservabilitySettings, env: NodeJS.ProcessEnv): number {
  if (settings.otelSampleRatio !== undefined) return settings.otelSampleRatio;
  const arg = nonEmpty(env.OTEL_TRACES_SAMPLER_ARG);
  const value = arg === undefined ? 1 : Number(arg);
  return Number.isFinite(value) && value >= 0 && value <= 1 ? value : 1;
}

const headerGetter: TextMapGetter<Record<string, string | undefined>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** Traces to `<base>/v1/traces` (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT wins, as the exporter reads it). */
function createTracing(
  base: string,
  ratio: number,
  resource: Resource,
  env: NodeJS.ProcessEnv,
): { tracing: Tracing; close: () => Promise<void> } {
  const url = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ?? `${base}/v1/traces`;
  const provider = new TracerProvider({
    resource,
    // roots are sampled by `sampleRoot` before the span starts: every root that gets here is recorded
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) })],
  });
  const propagator = new W3CTraceContextPropagator();
  const tracer = provider.getTracer("pemba");
  return {
    tracing: {
      tracer,
      extract(traceparent, tracestate): Context {
        if (traceparent === undefined) return ROOT_CONTEXT;
        return propagator.extract(ROOT_CONTEXT, { traceparent, tracestate }, headerGetter);
      },
      sampleRoot: ratio >= 1 ? () => true : () => Math.random() < ratio,
    },
    close: () => provider.shutdown(),
  };
}

/**
 * A file the decision log appends to; before a write would take it past `maxBytes` it is renamed `<file>.1`
 * (`.1` to `.2` and so on; the oldest beyond `keep` removed) and a new file begins.
 */
export class RotatingFile {
  readonly #path: string;
  readonly #maxBytes: number;
  readonly #keep: number;
  #handle: FileHandle | undefined;
  #size = 0;

  constructor(path: string, maxBytes: number, keep = DECISION_LOG_KEEP) {
    this.#path = path;
    this.#maxBytes = maxBytes;
    this.#keep = keep;
  }

  async write(text: string): Promise<void> {
    const bytes = Buffer.byteLength(text);
    if (this.#handle === undefined) {
      this.#handle = await open(this.#path, "a");
      this.#size = (await stat(this.#path)).size;
    }
    if (this.#size > 0 && this.#size + bytes > this.#maxBytes) await this.#rotate();
    await this.#handle!.write(text);
    this.#size += bytes;
  }

  async #rotate(): Promise<void> {
    await this.#handle?.close();
    this.#handle = undefined;
    await rm(`${this.#path}.${this.#keep}`, { force: true });
    for (let i = this.#keep - 1; i >= 1; i--) {
      await rename(`${this.#path}.${i}`, `${this.#path}.${i + 1}`).catch(() => {});
    }
    await rename(this.#path, `${this.#path}.1`);
    this.#handle = await open(this.#path, "a");
    this.#size = 0;
  }

  async close(): Promise<void> {
    await this.#handle?.close();
    this.#handle = undefined;
  }
}

/** Writes to stdout; a promise while stdout's buffer is full (records then wait in the log's bounded buffer). */
function stdoutSink(records: DecisionRecord[]): Promise<void> | undefined {
  if (process.stdout.write(toNdjson(records))) return undefined;
  return new Promise((resolve) => process.stdout.once("drain", resolve));
}

interface DecisionSink {
  write(records: DecisionRecord[]): void | Promise<void>;
  close(): Promise<void>;
}

function decisionSink(
  settings: ObservabilitySettings,
  base: string | undefined,
  resource: Resource,
  env: NodeJS.ProcessEnv,
): DecisionSink {
  const target = settings.decisionLog!;
  if (target === "stdout") return { write: stdoutSink, close: async () => {} };
  if (target === "otlp") {
    const url =
      nonEmpty(env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT) ?? (base === undefined ? undefined : `${base}/v1/logs`);
    if (url === undefined) {
      throw new ConfigError(
        `${settingName("decisionLog", "node")} otlp needs ${settingName("otelEndpoint", "node")} (or OTEL_EXPORTER_OTLP_ENDPOINT)`,
      );
    }
    const provider = new LoggerProvider({
      resource,
      processors: [new BatchLogRecordProcessor({ exporter: new OTLPLogExporter({ url }) })],
    });
    const logger = provider.getLogger("pemba.decisions");
    return {
      write(records) {
        for (const record of records) {
          logger.emit({
            eventName: "pemba.decision",
            timestamp: Date.parse(record.time),
            body: orderedRecord(record) as never,
            attributes: { "pemba.tenant": record.tenant, "pemba.decision": record.decision },
          });
        }
      },
      close: () => provider.shutdown(),
    };
  }
  const file = new RotatingFile(target, settings.decisionLogMaxMb * 1048576);
  return { write: (records) => file.write(toNdjson(records)), close: () => file.close() };
}

export interface DecisionLogHooks {
  /** A record dropped because the buffer was full. */
  onDrop?: () => void;
  onError?: (error: unknown) => void;
}

/** Tracing and the decision log as the settings ask; undefined when both are off. */
export function createObservability(
  settings: ObservabilitySettings,
  hooks: DecisionLogHooks = {},
  env: NodeJS.ProcessEnv = process.env,
): ServerObservability | undefined {
  const base = otlpBase(settings, env);
  const wantsTraces = base !== undefined || nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) !== undefined;
  if (!wantsTraces && settings.decisionLog === undefined) return undefined;
  const resource = serviceResource(env);
  const traces = wantsTraces
    ? createTracing(base ?? "", sampleRatio(settings, env), resource, env)
    : undefined;
  let sink: DecisionSink | undefined;
  let decisions: DecisionLog | undefined;
  if (settings.decisionLog !== undefined) {
    const own = decisionSink(settings, base, resource, env);
    sink = own;
    decisions = new DecisionLog({
      sink: (records) => own.write(records),
      sampleRatio: settings.decisionLogSampleRatio,
      alwaysDenials: settings.decisionLogDenials,
      redact: settings.decisionLogRedact,
      bufferSize: settings.decisionLogBuffer,
      schedule: (flush) => setTimeout(flush, DECISION_FLUSH_MS).unref(),
      onDrop: hooks.onDrop,
      onError: hooks.onError,
    });
  }
  return {
    tracing: traces?.tracing,
    decisions,
    async close() {
      await decisions?.flush();
      await sink?.close();
      await traces?.close();
    },
  };
}
