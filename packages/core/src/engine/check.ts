/** check, bulk check and subject-permission: the decision operations. */
import type { CompiledSchema, WalkResult } from "../compile/index.ts";
import { PembaError } from "../errors.ts";
import type { CheckResult, Entity, Subject } from "../model.ts";
import { Evaluation, FAILED, PENDING, settle, settlePass, TRUE } from "./evaluation/evaluation.ts";
import type { CheckOutcome, CheckQuery, EvaluationTarget } from "./types.ts";

const ALLOWED: CheckResult = "CHECK_RESULT_ALLOWED";
const DENIED: CheckResult = "CHECK_RESULT_DENIED";

function outcome(evaluation: Evaluation, result: WalkResult): CheckOutcome {
  if (result === FAILED) throw evaluation.error;
  return { can: result === TRUE ? ALLOWED : DENIED, checkCount: evaluation.checkCount || 1 };
}

/**
 * One permission check, on an evaluation from the target's pool when it has one. Synchronous when the store answers
 * synchronously. Throws PembaError for engine errors (ERROR_CODE_SCHEMA_NOT_FOUND, ERROR_CODE_DEPTH_NOT_ENOUGH,
 * rule evaluation errors).
 */
export function check(
  compiled: CompiledSchema,
  target: EvaluationTarget,
  query: CheckQuery,
): CheckOutcome | Promise<CheckOutcome> {
  const pool = target.evaluations;
  const evaluation =
    pool !== undefined
      ? pool.take(compiled, target, query.subject)
      : new Evaluation(compiled, target, query.subject);
  const { type, id } = query.entity;
  const permission = query.permission;
  const depth = target.depth;
  // First pass inline: with a synchronous store it decides, and no pass closure is needed.
  let result: WalkResult | Promise<WalkResult> = evaluation.invoke(type, id, permission, depth);
  if (result === PENDING) {
    const first = evaluation.load();
    const rest = () => settlePass(evaluation, () => evaluation.invoke(type, id, permission, depth));
    result = first === undefined ? rest() : first.then(rest);
  }
  if (result instanceof Promise) return result.then((r) => outcome(evaluation, r));
  const decided = outcome(evaluation, result);
  // an evaluation that ended with an error or a promise is not reused
  pool?.give(evaluation);
  return decided;
}

/**
 * Evaluates many checks together in one Evaluation: reads of all undecided items load in one batch per pass and
 * shared sub-problems are answered once. Returns each item's raw result (FAILED keeps its error separately).
 */
export function evaluateMany(
  evaluation: Evaluation,
  items: readonly CheckQuery[],
  depth: number,
):
  | { results: WalkResult[]; errors: unknown[]; counts: number[] }
  | Promise<{
      results: WalkResult[];
      errors: unknown[];
      counts: number[];
    }> {
  const results: WalkResult[] = items.map(() => PENDING);
  const errors: unknown[] = items.map(() => undefined);
  const counts: number[] = items.map(() => 1);
  const done = { results, errors, counts };
  /** One pass over the undecided items: `done` when every item is decided. */
  const pass = (): typeof done | undefined => {
    let undecided = false;
    for (let i = 0; i < items.length; i++) {
      if (results[i] !== PENDING) continue;
      const q = items[i];
      evaluation.setSubject(q.subject);
      evaluation.checkCount = 0;
      evaluation.error = undefined;
      const r = evaluation.invoke(q.entity.type, q.entity.id, q.permission, depth);
      results[i] = r;
      counts[i] = evaluation.checkCount || 1;
      if (r === FAILED) errors[i] = evaluation.error;
      if (r === PENDING) undecided = true;
    }
    return undecided ? undefined : done;
  };
  return settle(evaluation, pass, undefined);
}

/** Up to 100 checks for one context; an engine error for an item makes that item DENIED (Permify's behaviour). */
export async function bulkCheck(
  compiled: CompiledSchema,
  target: EvaluationTarget,
  queries: CheckQuery[],
): Promise<CheckOutcome[]> {
  if (queries.length === 0) return [];
  const evaluation = new Evaluation(compiled, target, queries[0].subject);
  const { results, counts } = await evaluateMany(evaluation, queries, target.depth);
  return results.map((r, i) => ({
    can: r === TRUE ? ALLOWED : DENIED,
    checkCount: r === FAILED ? 1 : counts[i],
  }));
}

/** Every permission (and relation unless onlyPermission) of the entity's type, checked for the subject. */
export async function subjectPermission(
  compiled: CompiledSchema,
  target: EvaluationTarget,
  query: { entity: Entity; subject: Subject; onlyPermission: boolean },
): Promise<Record<string, CheckResult>> {
  const entity = compiled.entities.get(query.entity.type);
  if (!entity) throw new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND");
  const names: string[] = [];
  for (const [name, kind] of entity.kinds) {
    if (kind === "permission" || (kind === "relation" && !query.onlyPermission)) names.push(name);
  }
  names.sort();
  const evaluation = new Evaluation(compiled, target, query.subject);
  const items = names.map((permission) => ({ entity: query.entity, permission, subject: query.subject }));
  const { results, errors } = await evaluateMany(evaluation, items, target.depth);
  const out: Record<string, CheckResult> = {};
  for (let i = 0; i < names.length; i++) {
    if (results[i] === FAILED) throw errors[i];
    out[names[i]] = results[i] === TRUE ? ALLOWED : DENIED;
  }
  return out;
}

/** A question's decision, or DENIED with the error that failed it. */
export interface Decided {
  can: CheckResult;
  error?: unknown;
  /** Sub-problems the question's walk evaluated (Permify's check_count). */
  checkCount: number;
}

const decided = (r: WalkResult, error: unknown, checkCount: number): Decided =>
  r === FAILED ? { can: DENIED, error, checkCount: 1 } : { can: r === TRUE ? ALLOWED : DENIED, checkCount };

/**
 * Questions on one evaluation (one target: one snap, one context), their reads batched per pass as in the bulk
 * check; a failed question is DENIED with its error. The evaluation may have answered questions before: the
 * sub-problems they decided are not decided again.
 */
export function decideAllOn(
  evaluation: Evaluation,
  queries: readonly CheckQuery[],
  depth: number,
): Decided[] | Promise<Decided[]> {
  const many = evaluateMany(evaluation, queries, depth);
  const out = ({ results, errors, counts }: { results: WalkResult[]; errors: unknown[]; counts: number[] }) =>
    results.map((r, i) => decided(r, errors[i], counts[i]!));
  return many instanceof Promise ? many.then(out) : out(many);
}
