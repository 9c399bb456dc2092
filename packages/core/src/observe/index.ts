/** Tracing (OpenTelemetry spans, runtime-neutral) and the decision log. */
export {
  DECISION_REDACTIONS,
  DEFAULT_DECISION_BUFFER,
  DEFAULT_DECISION_MAX_IDS,
  type DecisionApi,
  type DecisionFields,
  DecisionLog,
  type DecisionLogOptions,
  type DecisionRecord,
  type DecisionRedaction,
  hashSubjectId,
  orderedRecord,
  toNdjson,
} from "./decision-log.ts";
export { type Observability, RequestObservation } from "./observation.ts";
export { TracedReads } from "./traced-reads.ts";
export { SPAN, type Tracing, traceIdOf } from "./tracing.ts";
