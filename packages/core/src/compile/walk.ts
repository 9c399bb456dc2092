/**
 * The contract between compiled closures and the engine's per-request evaluation. Results are small integers so
 * the hot path allocates nothing: FALSE / TRUE, PENDING (a read is not loaded yet; the engine loads every read of
 * the pass in one batch and re-runs) and FAILED (an engine error, kept on the evaluation).
 */
import type { Subject, Tuple } from "../model.ts";
import type { CompiledRule } from "../rules/index.ts";

export const FALSE = 0;
export const TRUE = 1;
export const PENDING = 2;
export const FAILED = 3;
export type WalkResult = 0 | 1 | 2 | 3;

export interface Walk {
  /** The subject of the question being answered. */
  readonly subject: Subject;
  /** A nested sub-check (Permify's invoker): depth, self-subject rule, memo, cycle cut, then the member's closure. */
  invoke(type: string, id: string, name: string, depth: number): WalkResult;
  /** Stored ∪ contextual tuples `type:id#relation@*`; undefined while not loaded. */
  tuples(type: string, id: string, relation: string): readonly Tuple[] | undefined;
  /** A boolean attribute leaf: contextual first, then stored; missing → FALSE. */
  booleanAttribute(type: string, id: string, name: string): WalkResult;
  /** A rule call with the entity's attributes as arguments (stored first, then contextual, then zero values). */
  callRule(rule: CompiledRule, type: string, id: string): WalkResult;
}

/** The evaluation of one member (relation, permission, attribute) of one entity. */
export type MemberEvaluator = (walk: Walk, id: string, depth: number) => WalkResult;
