/**
 * RequestObservation: what one request carries down to the service for its spans and decision records. The
 * pipeline makes one only when tracing or the decision log is on; otherwise the service runs without it (the hot
 * path then makes no call for either).
 */
import type { Context, Span, Tracer } from "@opentelemetry/api";
import type { Store } from "../store/store.ts";
import type { DecisionFields, DecisionLog } from "./decision-log.ts";
import { TracedReads } from "./traced-reads.ts";
import { contextOf, endFailed, SPAN, type Tracing } from "./tracing.ts";

/** Where a request's spans and records go. */
export interface Observability {
  /** Tracing's tracer and W3C extraction; undefined: no spans. */
  tracing?: Tracing;
  /** The decision log; undefined: no records. */
  decisions?: DecisionLog;
}

export class RequestObservation {
  readonly tenantId: string;
  /** The principal's name for the decision log ("" without one). */
  readonly principal: string;
  /** `performance.now()` when the request arrived. */
  readonly started: number;
  /** The request span's trace id, else the caller's `traceparent`'s, else "". */
  readonly traceId: string;
  /** Set when the request is traced (its span records): the tracer and the request span's context. */
  readonly tracer: Tracer | undefined;
  readonly context: Context | undefined;
  readonly decisions: DecisionLog | undefined;

  constructor(fields: {
    tenantId: string;
    principal: string;
    started: number;
    traceId: string;
    tracer?: Tracer;
    context?: Context;
    decisions?: DecisionLog;
  }) {
    this.tenantId = fields.tenantId;
    this.principal = fields.principal;
    this.started = fields.started;
    this.traceId = fields.traceId;
    this.tracer = fields.tracer;
    this.context = fields.context;
    this.decisions = fields.decisions;
  }

  /** A child span of the request's span; undefined when the request is not traced. */
  startSpan(name: string, attributes?: Record<string, string | number | boolean>): Span | undefined {
    if (this.tracer === undefined || this.context === undefined) return undefined;
    return this.tracer.startSpan(name, { attributes }, this.context);
  }

  /** Milliseconds since the request arrived. */
  latencyMs(): number {
    return Math.round((performance.now() - this.started) * 1000) / 1000;
  }

  /** Records a decision in the log (when it is on) with this request's tenant, principal, latency and trace. */
  decided(
    fields: Omit<DecisionFields, "tenant" | "principal" | "latency_ms" | "trace_id">,
    latencyMs: number = this.latencyMs(),
    sampled = false,
  ): void {
    const log = this.decisions;
    if (log === undefined) return;
    const record = fields as DecisionFields;
    record.tenant = this.tenantId;
    record.principal = this.principal;
    record.latency_ms = latencyMs;
    record.trace_id = this.traceId;
    log.add(record, sampled);
  }

  /**
   * The evaluation span and the store its engine reads through (each read a span under it); without tracing, no
   * span and the store itself.
   */
  evaluation(
    store: Store,
    attributes: Record<string, string | number | boolean>,
  ): { span: Span | undefined; store: Store } {
    const span = this.startSpan(SPAN.evaluate, attributes);
    if (span === undefined) return { span, store };
    return { span, store: new TracedReads(store, this.tracer!, contextOf(this.context!, span)) };
  }
}

/**
 * Runs `work` inside `span` (when there is one): ends it when the work ends, failed when it throws or rejects, after
 * `after` has set the result's attributes.
 */
export function inSpan<T>(
  span: Span | undefined,
  work: () => T | Promise<T>,
  after?: (span: Span, result: T) => void,
): T | Promise<T> {
  if (span === undefined) return work();
  let result: T | Promise<T>;
  try {
    result = work();
  } catch (error) {
    endFailed(span, error);
    throw error;
  }
  const finish = (value: T): T => {
    after?.(span, value);
    span.end();
    return value;
  };
  if (result instanceof Promise) {
    return result.then(finish, (error: unknown) => {
      endFailed(span, error);
      throw error;
    });
  }
  return finish(result);
}

export { SPAN };
