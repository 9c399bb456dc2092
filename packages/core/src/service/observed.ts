/**
 * The permission questions of a request that is traced or whose decisions are logged: the same engine calls as
 * PembaService's own, inside a schema-resolution span and an evaluation span (its reads each a store span), and a
 * decision record per decision. PembaService runs these only when the request carries a RequestObservation.
 */
import type { Span } from "@opentelemetry/api";
import type { CompiledSchema } from "../compile/index.ts";
import * as engine from "../engine/index.ts";
import type {
  CheckOutcome,
  CheckQuery,
  EvaluationTarget,
  LookupEntityQuery,
  LookupSubjectQuery,
} from "../engine/types.ts";
import type { CheckResult, Context, Entity, Subject } from "../model.ts";
import type { DecisionApi } from "../observe/decision-log.ts";
import { inSpan, type RequestObservation, SPAN } from "../observe/observation.ts";
import type { ResolvedSchema } from "./schema-registry.ts";
import type { PermissionMetadata, Question, ServiceTarget, TargetResolver } from "./target.ts";

export const entityText = (e: Entity): string => `${e.type}:${e.id}`;
export const subjectText = (s: Subject): string =>
  s.relation ? `${s.type}:${s.id}#${s.relation}` : `${s.type}:${s.id}`;

/** Where a request's questions were decided, as its decision records name it. */
export interface DecidedAt {
  /** The snap token of the snap the evaluation read at. */
  snapToken: string;
  schemaVersion: string;
  /** The request's depth. */
  depth: number;
}

/** A record's fields before `decided` adds the request's tenant, principal, latency and trace. */
type DecidedFields = Parameters<RequestObservation["decided"]>[0];

/** A decided question's record. */
export function questionRecord(
  api: DecisionApi,
  at: DecidedAt,
  query: CheckQuery,
  can: CheckResult,
  checkCount: number,
  context: Context | undefined,
): DecidedFields {
  return {
    api,
    subject: subjectText(query.subject),
    permission: query.permission,
    entity: entityText(query.entity),
    decision: can,
    snap_token: at.snapToken,
    schema_version: at.schemaVersion,
    check_count: checkCount,
    depth: at.depth,
    context,
  };
}

/** A lookup's record, when the request's decisions are logged: the count and the first ids answered. */
export function lookupRecord(
  obs: RequestObservation | undefined,
  api: DecisionApi,
  at: DecidedAt,
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
    snap_token: at.snapToken,
    schema_version: at.schemaVersion,
    check_count: 0,
    count: ids.length,
    ids: ids.slice(0, log.maxIds),
    depth: at.depth,
    context,
  });
}

interface Resolved {
  schema: ResolvedSchema;
  target: ServiceTarget;
  at: DecidedAt;
}

/** The schema and snap, in a `pemba.schema.resolve` span. */
async function resolve(
  service: TargetResolver,
  obs: RequestObservation,
  tenantId: string,
  meta: PermissionMetadata,
  context: Context | undefined,
): Promise<Resolved> {
  const span = obs.startSpan(SPAN.schema, { "pemba.tenant": tenantId });
  const { schema, target } = await inSpan(
    span,
    () => service.target(tenantId, meta, context),
    (s, r) => {
      s.setAttribute("pemba.schema.version", r.schema.version);
      s.setAttribute("pemba.snap", r.target.snap);
    },
  );
  const at = {
    snapToken: service.snapTokenOf(tenantId, target.snap),
    schemaVersion: schema.version,
    depth: meta.depth,
  };
  return { schema, target, at };
}

/** Runs `evaluate` in a `pemba.evaluate` span whose store spans are its reads. */
function evaluate<T>(
  obs: RequestObservation,
  r: Resolved,
  attributes: Record<string, string | number | boolean>,
  run: (target: EvaluationTarget) => T | Promise<T>,
  describe: (span: Span, result: T) => void,
): T | Promise<T> {
  const { span, store } = obs.evaluation(r.target.store, { ...attributes, "pemba.snap": r.target.snap });
  const target = store === r.target.store ? r.target : { ...r.target, store };
  return inSpan(span, () => run(target), describe);
}

const describeCheck = (span: Span, o: CheckOutcome) => {
  span.setAttribute("pemba.decision", o.can);
  span.setAttribute("pemba.check_count", o.checkCount);
};

const checkAttributes = (query: CheckQuery, operation: string) => ({
  "pemba.operation": operation,
  "pemba.permission": query.permission,
  "pemba.entity.type": query.entity.type,
});

/** An untraced check's record, after the service's own fast path decided it. */
export function recordCheck(
  service: TargetResolver,
  obs: RequestObservation,
  schema: ResolvedSchema,
  snap: number,
  meta: PermissionMetadata,
  query: CheckQuery,
  context: Context | undefined,
  outcome: CheckOutcome | Promise<CheckOutcome>,
  api: DecisionApi = "check",
): CheckOutcome | Promise<CheckOutcome> {
  const record = (o: CheckOutcome): CheckOutcome => {
    if (obs.decisions?.sampled(o.can) === true) {
      const at = {
        snapToken: service.snapTokenOf(obs.tenantId, snap),
        schemaVersion: schema.version,
        depth: meta.depth,
      };
      obs.decided(questionRecord(api, at, query, o.can, o.checkCount, context), obs.latencyMs(), true);
    }
    return o;
  };
  return outcome instanceof Promise ? outcome.then(record) : record(outcome);
}

export async function observedCheck(
  service: TargetResolver,
  obs: RequestObservation,
  tenantId: string,
  meta: PermissionMetadata,
  query: CheckQuery,
  context: Context | undefined,
): Promise<CheckOutcome> {
  const r = await resolve(service, obs, tenantId, meta, context);
  const outcome = await evaluate(
    obs,
    r,
    checkAttributes(query, "check"),
    (target) => engine.check(r.schema.compiled, target, query),
    describeCheck,
  );
  obs.decided(questionRecord("check", r.at, query, outcome.can, outcome.checkCount, context));
  return outcome;
}

/** A traced `checkWith`: the question is built from the resolved schema, then evaluated with its own context. */
export async function observedCheckWith(
  service: TargetResolver,
  obs: RequestObservation,
  tenantId: string,
  meta: PermissionMetadata,
  ask: (schema: CompiledSchema) => Question | undefined,
  api: DecisionApi,
): Promise<CheckOutcome | undefined> {
  const r = await resolve(service, obs, tenantId, meta, undefined);
  const question = ask(r.schema.compiled);
  if (question === undefined) return undefined;
  const { query, context } = question;
  const outcome = await evaluate(
    obs,
    r,
    checkAttributes(query, api),
    (target) =>
      engine.check(
        r.schema.compiled,
        { ...target, context, contextualAttributesFirst: question.contextualAttributesFirst },
        query,
      ),
    describeCheck,
  );
  obs.decided(questionRecord(api, r.at, query, outcome.can, outcome.checkCount, context));
  return outcome;
}

export async function observedBulkCheck(
  service: TargetResolver,
  obs: RequestObservation,
  tenantId: string,
  meta: PermissionMetadata,
  queries: CheckQuery[],
  context: Context | undefined,
): Promise<CheckOutcome[]> {
  const r = await resolve(service, obs, tenantId, meta, context);
  const outcomes = await evaluate(
    obs,
    r,
    { "pemba.operation": "bulk_check", "pemba.items": queries.length },
    (target) => engine.bulkCheck(r.schema.compiled, target, queries),
    (span, out) => {
      let allowed = 0;
      let checks = 0;
      for (const o of out) {
        if (o.can === "CHECK_RESULT_ALLOWED") allowed++;
        checks += o.checkCount;
      }
      span.setAttribute("pemba.allowed", allowed);
      span.setAttribute("pemba.check_count", checks);
    },
  );
  if (obs.decisions !== undefined) {
    const latency = obs.latencyMs();
    for (let i = 0; i < queries.length; i++) {
      const o = outcomes[i]!;
      obs.decided(questionRecord("bulk_check", r.at, queries[i]!, o.can, o.checkCount, context), latency);
    }
  }
  return outcomes;
}

export async function observedExplain(
  service: TargetResolver,
  obs: RequestObservation,
  tenantId: string,
  meta: PermissionMetadata,
  query: CheckQuery,
  context: Context | undefined,
): Promise<engine.Explanation> {
  const r = await resolve(service, obs, tenantId, meta, context);
  const out = await evaluate(
    obs,
    r,
    checkAttributes(query, "explain"),
    (target) => engine.explain({ ...target, schema: r.schema.compiled }, query),
    (span, o) => {
      span.setAttribute("pemba.decision", o.can);
      span.setAttribute("pemba.check_count", o.metadata.check_count);
    },
  );
  obs.decided(questionRecord("explain", r.at, query, out.can, out.metadata.check_count, context));
  return out;
}

export async function observedLookupEntity(
  service: TargetResolver,
  obs: RequestObservation,
  tenantId: string,
  meta: PermissionMetadata,
  query: LookupEntityQuery,
  context: Context | undefined,
): Promise<{ entityIds: string[]; continuousToken: string }> {
  const r = await resolve(service, obs, tenantId, meta, context);
  const out = await evaluate(
    obs,
    r,
    {
      "pemba.operation": "lookup_entity",
      "pemba.permission": query.permission,
      "pemba.entity.type": query.entityType,
    },
    (target) => engine.lookupEntity(r.schema.compiled, target, query),
    (span, o) => span.setAttribute("pemba.count", o.entityIds.length),
  );
  const fields = {
    subject: subjectText(query.subject),
    permission: query.permission,
    entity: query.entityType,
  };
  lookupRecord(obs, "lookup_entity", r.at, fields, out.entityIds, context);
  return out;
}

export async function observedLookupSubject(
  service: TargetResolver,
  obs: RequestObservation,
  tenantId: string,
  meta: PermissionMetadata,
  query: LookupSubjectQuery,
  context: Context | undefined,
): Promise<{ subjectIds: string[]; continuousToken: string }> {
  const r = await resolve(service, obs, tenantId, meta, context);
  const out = await evaluate(
    obs,
    r,
    {
      "pemba.operation": "lookup_subject",
      "pemba.permission": query.permission,
      "pemba.entity.type": query.entity.type,
    },
    (target) => engine.lookupSubject(r.schema.compiled, target, query),
    (span, o) => span.setAttribute("pemba.count", o.subjectIds.length),
  );
  const ref = query.subjectReference;
  const fields = {
    subject: ref.relation ? `${ref.type}#${ref.relation}` : ref.type,
    permission: query.permission,
    entity: entityText(query.entity),
  };
  lookupRecord(obs, "lookup_subject", r.at, fields, out.subjectIds, context);
  return out;
}

export async function observedSubjectPermission(
  service: TargetResolver,
  obs: RequestObservation,
  tenantId: string,
  meta: PermissionMetadata,
  entity: Entity,
  subject: Subject,
  onlyPermission: boolean,
  context: Context | undefined,
): Promise<Record<string, CheckResult>> {
  const r = await resolve(service, obs, tenantId, meta, context);
  const results = await evaluate(
    obs,
    r,
    { "pemba.operation": "subject_permission", "pemba.entity.type": entity.type },
    (target) => engine.subjectPermission(r.schema.compiled, target, { entity, subject, onlyPermission }),
    (span, o) => span.setAttribute("pemba.count", Object.keys(o).length),
  );
  if (obs.decisions !== undefined) {
    const latency = obs.latencyMs();
    for (const [permission, can] of Object.entries(results)) {
      const query = { entity, permission, subject };
      obs.decided(questionRecord("subject_permission", r.at, query, can, 0, context), latency);
    }
  }
  return results;
}
