/**
 * The Access Evaluation and Access Evaluations APIs over the service. One evaluation is a check on the check's
 * fast path. A batch resolves the schema and the snap once; its questions share evaluations (one per group of
 * questions whose contextual data agree): `execute_all` evaluates every group as a bulk check does (reads batched
 * per pass), the two short-circuit semantics evaluate one question at a time in request order and stop at the
 * first deny (or permit), so the questions after it are never evaluated.
 */
import type { CompiledSchema } from "../compile/index.ts";
import { type Decided, decideAllOn, Evaluation } from "../engine/index.ts";
import type { CheckQuery, EvaluationTarget } from "../engine/types.ts";
import { isPembaError, PembaError } from "../errors.ts";
import type { Attribute, Tuple } from "../model.ts";
import type { RequestObservation } from "../observe/observation.ts";
import type { PembaService, PermissionMetadata } from "../service/index.ts";
import { questionRecord } from "../service/observed.ts";
import type { MaybePromise } from "../store/store.ts";
import { type MappedQuestion, mapQuestion, type Refusal } from "./mapping.ts";
import { decidedAt, inEvaluation, resolveObserved } from "./observed.ts";
import {
  type AccessDecision,
  type AccessEvaluationRequest,
  AccessEvaluationRequestSchema,
  type AccessEvaluationsRequest,
  AuthzenActionSchema,
  AuthzenResourceSchema,
  AuthzenSubjectSchema,
  type EvaluationsSemantic,
  issueText,
  parseAuthzen,
} from "./wire.ts";

/** How deep a question may nest (Permify's metadata.depth); AuthZEN has no such field. */
export const AUTHZEN_DEPTH = 50;
const HEAD: PermissionMetadata = { schemaVersion: "", snapToken: "", depth: AUTHZEN_DEPTH };

const ALLOWED = "CHECK_RESULT_ALLOWED";
const PERMIT: AccessDecision = { decision: true };
const DENY: AccessDecision = { decision: false };

/** A closed decision that says why: a refused question or a failed evaluation. */
export const failedDecision = (status: number, message: string): AccessDecision => ({
  decision: false,
  context: { error: { status, message } },
});

/**
 * A question's error as a closed decision: a client error, or a rule that failed on the request's data (a
 * `context` key it reads is missing: ERROR_CODE_EXECUTION); any other server error (500) is thrown on.
 */
function errorDecision(e: unknown): AccessDecision {
  if (isPembaError(e) && e.httpStatus < 500) return failedDecision(e.httpStatus, e.message);
  if (isPembaError(e) && e.code === "ERROR_CODE_EXECUTION") return failedDecision(400, e.message);
  throw e;
}

const decisionOf = (d: Decided): AccessDecision =>
  d.error !== undefined ? errorDecision(d.error) : d.can === ALLOWED ? PERMIT : DENY;

/** The Access Evaluation API: one decision. */
export function evaluate(
  service: PembaService,
  tenantId: string,
  req: AccessEvaluationRequest,
  obs?: RequestObservation,
): MaybePromise<AccessDecision> {
  let refusal: Refusal | undefined;
  const ask = (schema: CompiledSchema) => {
    const m = mapQuestion(schema, req);
    if ("refusal" in m) {
      refusal = m.refusal;
      return undefined;
    }
    return { query: m.query, context: m.context, contextualAttributesFirst: true };
  };
  const answer = (o: { can: string } | undefined): AccessDecision =>
    o === undefined ? failedDecision(refusal!.status, refusal!.message) : o.can === ALLOWED ? PERMIT : DENY;
  try {
    const out = service.checkWith(tenantId, HEAD, ask, obs, "authzen_evaluation");
    return out instanceof Promise ? out.then(answer, errorDecision) : answer(out);
  } catch (e) {
    return errorDecision(e);
  }
}

/** An item of a batch: its question in Pemba's terms, or why it is refused. */
type Item = { mapped: MappedQuestion; group: number } | { refusal: Refusal };

/** Questions that share one evaluation: the same `context.data`, and no entity with two sets of properties. */
interface Group {
  dataKey: string;
  tuples: Tuple[];
  attributes: Attribute[];
  data: Record<string, unknown> | undefined;
  /** `type:id` -> the properties it was given with (JSON; "" = none), when any item has properties. */
  props: Map<string, string> | undefined;
  queries: CheckQuery[];
  /** Item index of each query. */
  indexes: number[];
  evaluation?: Evaluation;
}

const entityKey = (e: { type: string; id: string }) => `${e.type}:${e.id}`;
const propsKey = (p: Record<string, unknown> | undefined) => (p === undefined ? "" : JSON.stringify(p));

/** Item `i`'s question: the item's entities, each one (whole) in place of the top-level default. */
function itemQuestion(
  req: AccessEvaluationsRequest,
  item: Record<string, unknown>,
): { question: AccessEvaluationRequest } | { refusal: Refusal } {
  const parts = {
    subject: [item.subject ?? req.subject, AuthzenSubjectSchema],
    action: [item.action ?? req.action, AuthzenActionSchema],
    resource: [item.resource ?? req.resource, AuthzenResourceSchema],
  } as const;
  for (const [name, [value, schema]] of Object.entries(parts)) {
    if (value === undefined) return { refusal: { status: 400, message: `${name}: required object` } };
    const r = schema.safeParse(value);
    if (!r.success) return { refusal: { status: 400, message: `${name}.${issueText(r.error.issues[0])}` } };
  }
  const context = item.context ?? req.context;
  if (context !== undefined && (typeof context !== "object" || context === null || Array.isArray(context))) {
    return { refusal: { status: 400, message: "context: expected object" } };
  }
  return {
    question: {
      subject: parts.subject[0] as AccessEvaluationRequest["subject"],
      action: parts.action[0] as AccessEvaluationRequest["action"],
      resource: parts.resource[0] as AccessEvaluationRequest["resource"],
      context: context as Record<string, unknown> | undefined,
    },
  };
}

/** Puts each mapped question in the first group it agrees with (most batches: one group). */
function groupItems(
  schema: CompiledSchema,
  req: AccessEvaluationsRequest,
): { items: Item[]; groups: Group[] } {
  const list = req.evaluations ?? [];
  const questions = list.map((item) => itemQuestion(req, item as Record<string, unknown>));
  const withProps = questions.some(
    (q) => "question" in q && (q.question.subject.properties || q.question.resource.properties),
  );
  const groups: Group[] = [];
  const items: Item[] = questions.map((q, index) => {
    if ("refusal" in q) return q;
    const m = mapQuestion(schema, q.question);
    if ("refusal" in m) return m;
    const s = q.question.subject;
    const r = q.question.resource;
    const keys = withProps
      ? [
          [entityKey(m.query.subject), propsKey(s.properties)],
          [entityKey(m.query.entity), propsKey(r.properties)],
        ]
      : [];
    let group = groups.findIndex(
      (g) =>
        g.dataKey === m.dataKey &&
        keys.every(([k, p]) => {
          const had = g.props!.get(k!);
          return had === undefined || had === p;
        }),
    );
    if (group < 0) {
      group = groups.length;
      groups.push({
        dataKey: m.dataKey,
        tuples: [],
        attributes: [],
        data: m.context?.data,
        props: withProps ? new Map() : undefined,
        queries: [],
        indexes: [],
      });
    }
    const g = groups[group]!;
    for (const [k, p] of keys) {
      if (!g.props!.has(k!)) {
        g.props!.set(k!, p!);
        if (p !== "" && m.context !== undefined) {
          g.tuples.push(...m.context.tuples.filter((t) => entityKey(t.entity) === k));
          g.attributes.push(...m.context.attributes.filter((a) => entityKey(a.entity) === k));
        }
      }
    }
    g.queries.push(m.query);
    g.indexes.push(index);
    return { mapped: m, group };
  });
  return { items, groups };
}

function evaluationOf(compiled: CompiledSchema, target: EvaluationTarget, g: Group): Evaluation {
  const plain = g.data === undefined && g.tuples.length === 0 && g.attributes.length === 0;
  g.evaluation ??= new Evaluation(
    compiled,
    {
      ...target,
      context: plain ? undefined : { tuples: g.tuples, attributes: g.attributes, data: g.data ?? {} },
      contextualAttributesFirst: true,
    },
    g.queries[0]!.subject,
  );
  return g.evaluation;
}

/** The Access Evaluations API: decisions in request order (fewer when a short-circuit semantic stops). */
export async function evaluateMany(
  service: PembaService,
  tenantId: string,
  req: AccessEvaluationsRequest,
  maxItems: number,
  obs?: RequestObservation,
): Promise<{ decision?: boolean; evaluations?: AccessDecision[] }> {
  const list = req.evaluations ?? [];
  if (list.length === 0) {
    // no evaluations: the single Access Evaluation request, answered as one
    const single = parseAuthzen("AccessEvaluationsRequest", AccessEvaluationRequestSchema, req);
    const d = await evaluate(service, tenantId, single, obs);
    return d;
  }
  if (list.length > maxItems) {
    throw new PembaError(
      "ERROR_CODE_VALIDATION",
      `invalid AccessEvaluationsRequest: evaluations: at most ${maxItems} items`,
      { grpcCode: 3 },
    );
  }
  const resolved = await resolveObserved(service, tenantId, HEAD, obs);
  const { schema } = resolved;
  const { items, groups } = groupItems(schema, req);
  const semantic: EvaluationsSemantic = req.options?.evaluations_semantic ?? "execute_all";
  const decisionOfItem = (item: Item, d?: Decided): AccessDecision =>
    "refusal" in item ? failedDecision(item.refusal.status, item.refusal.message) : decisionOf(d!);
  const attributes = { "pemba.operation": "authzen_evaluations", "pemba.items": list.length };
  const decided: (Decided | undefined)[] = new Array(items.length);

  const evaluations = await inEvaluation(obs, resolved.target, attributes, async (target) => {
    if (semantic === "execute_all") {
      await Promise.all(
        groups.map(async (g) => {
          const out = await decideAllOn(evaluationOf(schema, target, g), g.queries, target.depth);
          out.forEach((d, k) => {
            decided[g.indexes[k]!] = d;
          });
        }),
      );
      return items.map((item, i) => decisionOfItem(item, decided[i]));
    }
    const stopAt = semantic !== "deny_on_first_deny";
    const answers: AccessDecision[] = [];
    for (const [i, item] of items.entries()) {
      let d: AccessDecision;
      if ("refusal" in item) d = decisionOfItem(item);
      else {
        const g = groups[item.group]!;
        const out = decideAllOn(evaluationOf(schema, target, g), [item.mapped.query], target.depth);
        decided[i] = (out instanceof Promise ? await out : out)[0];
        d = decisionOfItem(item, decided[i]);
      }
      answers.push(d);
      if (d.decision === stopAt) break;
    }
    return answers;
  });
  if (obs?.decisions !== undefined) {
    const latency = obs.latencyMs();
    items.forEach((item, i) => {
      const d = decided[i];
      // a refused item (no question the schema can pose) and an item a short circuit skipped decided nothing
      if ("refusal" in item || d === undefined) return;
      const { query, context } = item.mapped;
      obs.decided(
        questionRecord("authzen_evaluations", decidedAt(resolved), query, d.can, d.checkCount, context),
        latency,
      );
    });
  }
  return { evaluations };
}
