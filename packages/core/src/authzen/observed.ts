/**
 * AuthZEN requests under tracing or the decision log: where the batch and search APIs resolve the schema and snap
 * (a `pemba.schema.resolve` span) and evaluate (a `pemba.evaluate` span whose reads are `pemba.store` spans), and
 * where their decision records say they decided (the records are service/observed.ts's, as for Permify's API: one per
 * question decided, one lookup record per search page). Without an observation each helper is the plain call.
 */
import type { Span } from "@opentelemetry/api";
import type { CompiledSchema } from "../compile/index.ts";
import { inSpan, type RequestObservation, SPAN } from "../observe/observation.ts";
import type { PembaService, PermissionMetadata, ServiceTarget } from "../service/index.ts";
import type { DecidedAt } from "../service/observed.ts";

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

/** Where the request's questions were decided, as its decision records name it. */
export const decidedAt = (r: ResolvedTarget): DecidedAt => ({
  snapToken: r.snapToken,
  schemaVersion: r.schemaVersion,
  depth: r.target.depth,
});
