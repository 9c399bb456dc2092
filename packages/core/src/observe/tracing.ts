/**
 * Tracing, runtime-neutral, on the OpenTelemetry API: the runtime gives a Tracer (its SDK: sampler, exporter) and
 * core starts the spans. Spans are parented explicitly (a request's span context is handed down), so no context
 * manager is needed and the Worker gets the same tree as the Node server.
 *
 * Nothing here runs when tracing is off: the pipeline holds no `Tracing` and makes no OpenTelemetry call.
 */
import {
  type Attributes,
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";

export interface Tracing {
  /** Starts the spans; its sampler decides which requests are recorded. */
  tracer: Tracer;
  /** The context a request joins: the caller's W3C `traceparent` (and `tracestate`), or a new root. */
  extract(traceparent: string | undefined, tracestate: string | undefined): Context;
  /**
   * Whether a request without a `traceparent` is traced (the sample ratio). Decided before any OpenTelemetry call,
   * so an unsampled request costs one random number; the tracer's sampler then records every root it is given and
   * follows the caller's decision for the rest (ParentBased over AlwaysOn).
   */
  sampleRoot(): boolean;
}

/** Span names (README, Observability). */
export const SPAN = {
  schema: "pemba.schema.resolve",
  evaluate: "pemba.evaluate",
  store: "pemba.store",
} as const;

/** The request's span: `<METHOD> <route>`, a server span under the caller's context. */
export function startRequestSpan(tracing: Tracing, method: string, route: string, parent: Context): Span {
  return tracing.tracer.startSpan(
    `${method} ${route}`,
    { kind: SpanKind.SERVER, attributes: { "http.request.method": method, "http.route": route } },
    parent,
  );
}

/** A child span of `parent` (a recording span's context). */
export function startChildSpan(tracer: Tracer, name: string, parent: Context, attributes?: Attributes): Span {
  return tracer.startSpan(name, { attributes }, parent);
}

/** Marks `span` failed with `error` (its Permify code when it has one) and ends it. */
export function endFailed(span: Span, error: unknown): void {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === "string") span.setAttribute("pemba.error_code", code);
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
  span.end();
}

/** The span's context as a parent for its children. */
export function contextOf(parent: Context, span: Span): Context {
  return trace.setSpan(parent, span);
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})/;
const ZERO_TRACE = "00000000000000000000000000000000";
const ZERO_SPAN = "0000000000000000";

/** The trace id of a W3C `traceparent` header ("" when it has none or is malformed). */
export function traceIdOf(traceparent: string | undefined): string {
  if (traceparent === undefined) return "";
  const match = TRACEPARENT.exec(traceparent.trim());
  return match === null || match[1] === ZERO_TRACE ? "" : match[1]!;
}

/**
 * Whether the caller of a W3C `traceparent` sampled its trace (the flags' sampled bit); undefined when the header
 * is malformed (the request is then sampled as one without it).
 */
export function callerSampled(traceparent: string): boolean | undefined {
  const match = TRACEPARENT.exec(traceparent.trim());
  if (match === null || match[1] === ZERO_TRACE || match[2] === ZERO_SPAN) return undefined;
  return (Number.parseInt(match[3]!, 16) & 1) === 1;
}

export { SpanStatusCode };
