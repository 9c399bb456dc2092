/**
 * AuthZEN requests under tracing or the decision log: where the batch and search APIs resolve the schema and snap
 * (a `pemba.schema.resolve` span), evaluate (a `pemba.evaluate` span whose reads are `pemba.store` spans) and what
 * they record (a decision record per question decided, a lookup record per search page). Without an observation
 * each helper is the plain call.
 */
import type { Span } from "@opentelemetry/api";
import type { CompiledSchema } from "../compile/index.ts";
import type { CheckQuery } from "../engine/types.ts";
import type { CheckResult, Context } from "../model.ts";
import type { DecisionApi, DecisionFields } from "../observe/decision-log.ts";
import { inSpan, type RequestObservation, SPAN } from "../observe/observation.ts";
import type { PembaService, PermissionMetadata, ServiceTarget } from "../service/index.ts";
import { entityText, subjectText } from "../service/observed.ts";

/** The compiled schema, its version and where questions are evaluated, at `meta`'s snap. */
export interface ResolvedTarget {
  schema: CompiledSchema;
  target: ServiceTarget;
  snapToken: string;
  schemaVersion: string;
}

/** `service.evaluationTarget`, in a schema-resolution span when the request is traced. */
export function resolveObserved(
  service: PembaService,
  tenantId: string,
  meta: PermissionMetadata,
  obs: RequestObservation | undefined,
): Promise<ResolvedTarget> {
  const span = obs?.startSpan(SPAN.schema, { "pemba.tenant": tenantId });
  return inSpan(
    span,
    () => service.evaluationTarget(tenantId, meta),
    (s, r) => {
      s.setAttribute("pemba.schema.version", r.schemaVersion);
      s.setAttribute("pemba.snap", r.target.snap);
    },
  ) as Promise<ResolvedTarget>;
}

/** Runs `run` on `target`; traced: in an evaluation span, reading through the traced store. */
export function inEvaluation<T>(
  obs: RequestObservation | undefined,
  target: ServiceTarget,
  attributes: Record<string, string | number | boolean>,
  run: (target: ServiceTarget) => Promise<T>,
  describe?: (span: Span, result: T) => void,
): Promise<T> {
  if (obs?.tracer === undefined) return run(target);
  const { span, store } = obs.evaluation(target.store, { ...attributes, "pemba.snap": target.snap });
  return inSpan(span, () => run({ ...target, store }), describe) as Promise<T>;
}

/** A decided question's record (the request's tenant, principal, latency and trace are added by `decided`). */
export function questionRecord(
  api: DecisionApi,
  r: ResolvedTarget,
  query: CheckQuery,
  can: CheckResult,
  checkCount: number,
  context: Context | undefined,
): Omit<DecisionFields, "tenant" | "principal" | "latency_ms" | "trace_id"> {
  return {
    api,
    subject: subjectText(query.subject),
    permission: query.permission,
    entity: entityText(query.entity),
    decision: can,
    snap_token: r.snapToken,
    schema_version: r.schemaVersion,
    check_count: checkCount,
    depth: r.target.depth,
    context,
  };
}

/** A search page's record: the count and the first ids answered, as a lookup's. */
export function searchRecord(
  obs: RequestObservation | undefined,
  api: DecisionApi,
  r: ResolvedTarget,
  fields: { subject: string; permission: string; entity: string },
  ids: string[],
  context: Context | undefined,
): void {
  const log = obs?.decisions;
  if (log === undefined) return;
  obs!.decided({
    api,
    ...fields,
    decision: "LOOKUP",
    snap_token: r.snapToken,
    schema_version: r.schemaVersion,
    check_count: 0,
    count: ids.length,
    ids: ids.slice(0, log.maxIds),
    depth: r.target.depth,
    context,
  });
}
