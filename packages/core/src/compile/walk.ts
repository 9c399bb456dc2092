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

/**
 * One readable/invocable name of one entity type, resolved when the schema compiles. `slot` is a small integer
 * unique in the compiled schema: the engine keys its per-request memo and read cache by (slot, id), so the hot
 * path builds no string keys. Immutable: concurrent requests share the compiled schema, so per-request state lives
 * in the engine's evaluation, never here.
 */
export interface ReadRef {
  readonly slot: number;
  readonly type: string;
  readonly name: string;
}

/** A relation, permission, attribute (or a rule called by name) of one entity type, with its closure. */
export interface MemberRef extends ReadRef {
  evaluate: MemberEvaluator;
}

export interface Walk {
  /** The subject of the question being answered. */
  readonly subject: Subject;
  /** A nested sub-check (Permify's invoker): depth, self-subject rule, memo, cycle cut, then the member's closure. */
  invoke(type: string, id: string, name: string, depth: number): WalkResult;
  /** `invoke` of a member resolved at compile time. */
  call(ref: MemberRef, id: string, depth: number): WalkResult;
  /** The member `type#name` (undefined when the schema has none): for closures that cache it per subject type. */
  member(type: string, name: string): MemberRef | undefined;
  /** Stored ∪ contextual tuples `type:id#relation@*` of the relation `ref`; undefined while not loaded. */
  relation(ref: ReadRef, id: string): readonly Tuple[] | undefined;
  /** A boolean attribute leaf: contextual first, then stored; missing → FALSE. */
  attribute(ref: ReadRef, id: string): WalkResult;
  /** A rule call with the entity's attributes as arguments (stored first, then contextual, then zero values). */
  callRule(rule: CompiledRule, type: string, id: string): WalkResult;
  /** A rule checked by its own name (Permify's checkDirectCall without arguments): no parameter is bound. */
  callRuleByName(rule: CompiledRule): WalkResult;
}

/** The evaluation of one member (relation, permission, attribute) of one entity. */
export type MemberEvaluator = (walk: Walk, id: string, depth: number) => WalkResult;
