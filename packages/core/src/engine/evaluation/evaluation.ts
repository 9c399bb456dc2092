/**
 * One request's evaluation: the subject, and the walk's concerns composed (each in evaluation/): the entry table
 * every per-request table is keyed by, the memo of decided sub-problems, the walk path for cycle cuts, the reads
 * (batched per pass, cached for the request), the contextual data and the rule calls.
 *
 * A pass walks the compiled closures; a read that is not loaded yet makes its branch PENDING and is queued. When a
 * pass ends undecided, every queued read is loaded with ONE store call per kind (tuples, attributes) and the pass
 * re-runs; decided sub-problems are memoized, so each pass effectively goes one level deeper. With a synchronous
 * store (memory, better-sqlite3) nothing is awaited.
 *
 * Nothing here is shared between requests: the compiled schema is read only, and an evaluation is reused only
 * through its owner's EvaluationPool, once its question is answered.
 */
import type { CompiledSchema } from "../../compile/index.ts";
import {
  FAILED,
  FALSE,
  type MemberRef,
  PENDING,
  type ReadRef,
  TRUE,
  type Walk,
  type WalkResult,
} from "../../compile/index.ts";
import { PembaError } from "../../errors.ts";
import type { Attribute, Context, Subject, Tuple } from "../../model.ts";
import type { CompiledRule } from "../../rules/index.ts";
import type { EngineStore } from "../../store/capabilities.ts";
import type { Snap } from "../../store/types.ts";
import { ContextualData, NO_DATA } from "./context.ts";
import { MAX_NESTING, WalkPath } from "./cycle.ts";
import { EntryTable } from "./entries.ts";
import { Memo } from "./memo.ts";
import { ReadBatch } from "./read-batch.ts";
import { callRuleByName, RuleCalls } from "./rules-call.ts";

/** Which stores answer a batch synchronously, as the owner of the evaluations remembers them (EvaluationPool). */
export interface SynchronousStores {
  readonly learnSynchronous: (store: EngineStore) => void;
  answersSynchronously(store: EngineStore): boolean;
}

/** What one evaluation reads: the store at one snap of one tenant, at one time, with the request's context. */
export interface EvaluationInput {
  store: EngineStore;
  tenantId: string;
  snap: Snap;
  /**
   * The evaluation time (ms since the epoch): rows whose `expiresAt` is at or before it are absent. ONE value for
   * the whole request, so the answer is a function of (snap, at). Default: the clock when the evaluation starts.
   */
  at?: number;
  /** Permify's metadata.depth (callers validate >= 3). */
  depth: number;
  context?: Context;
  /**
   * A contextual attribute wins over a stored one in rule arguments too (AuthZEN: the properties a request sends
   * are what it asks about). Default: Permify's order, stored first in rule arguments.
   */
  contextualAttributesFirst?: boolean;
  /** The stores known to answer synchronously (the caller's EvaluationPool). */
  evaluations?: SynchronousStores;
}

export class Evaluation implements Walk {
  // Fields with "!" hold the state of one question: `reset` (also run by the constructor) sets every one of them.
  schema!: CompiledSchema;
  data!: Record<string, unknown>;
  contextualAttributesFirst!: boolean;
  subject!: Subject;
  /** Invocations in the latest pass (Permify's check_count: not a stable contract). */
  checkCount!: number;
  /** The latest engine error; a FAILED result refers to it. */
  error!: unknown;
  #context!: ContextualData | undefined;
  readonly #entries = new EntryTable();
  readonly #memo = new Memo();
  readonly #path = new WalkPath();
  readonly #reads = new ReadBatch();
  readonly #rules = new RuleCalls();

  constructor(schema: CompiledSchema, target: EvaluationInput, subject: Subject) {
    this.reset(schema, target, subject);
  }

  /** Entries in the table (distinct (slot, id) pairs asked about). */
  get entries(): number {
    return this.#entries.n;
  }

  /** Store calls made (for tests and tuning). */
  get storeCalls(): number {
    return this.#reads.storeCalls;
  }

  /**
   * Starts the evaluation of a question. On a used evaluation this empties it, keeping the tables' arrays (see
   * EvaluationPool).
   */
  reset(schema: CompiledSchema, target: EvaluationInput, subject: Subject): void {
    this.schema = schema;
    this.subject = subject;
    this.checkCount = 0;
    this.error = undefined;
    const ctx = target.context;
    this.data = (ctx?.data as Record<string, unknown>) ?? NO_DATA;
    this.contextualAttributesFirst = target.contextualAttributesFirst === true;
    const context = ContextualData.of(ctx);
    this.#context = context;
    this.#entries.reset(schema);
    this.#memo.reset();
    this.#path.reset();
    this.#rules.reset();
    const store = target.store;
    const pool = target.evaluations;
    this.#reads.reset(
      store,
      target.tenantId,
      target.snap,
      target.at ?? Date.now(),
      context,
      pool?.answersSynchronously(store) === true,
      pool?.learnSynchronous,
    );
  }

  /** Switches the question's subject (bulk check, lookup-subject); each subject keeps its own memo. */
  setSubject(subject: Subject): void {
    this.#memo.setSubject(this.#entries.n, this.subject, subject);
    this.subject = subject;
  }

  fail(error: unknown): WalkResult {
    this.error = error;
    return FAILED;
  }

  /** The entry of (slot, id); a new one starts unread and undecided. */
  #entry(slot: number, id: string): number {
    const entries = this.#entries;
    const n = entries.n;
    const e = entries.entry(slot, id);
    if (e === n) {
      this.#memo.add(e);
      this.#reads.add(e);
    }
    return e;
  }

  /** The entry number of (ref, id): for walks beside the compiled closures (explain) to key their own tables. */
  entryOf(ref: ReadRef, id: string): number {
    return this.#entry(ref.slot, id);
  }

  invoke(type: string, id: string, name: string, depth: number): WalkResult {
    this.checkCount++;
    if (depth < 0) return this.fail(new PembaError("ERROR_CODE_DEPTH_NOT_ENOUGH"));
    const s = this.subject;
    if (s.relation === name && s.id === id && s.type === type) return TRUE;
    const ref = this.member(type, name);
    if (ref === undefined) return this.fail(new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND"));
    return this.#run(ref, id, depth);
  }

  call(ref: MemberRef, id: string, depth: number): WalkResult {
    this.checkCount++;
    if (depth < 0) return this.fail(new PembaError("ERROR_CODE_DEPTH_NOT_ENOUGH"));
    const s = this.subject;
    if (s.relation === ref.name && s.id === id && s.type === ref.type) return TRUE;
    return this.#run(ref, id, depth);
  }

  /** Memo, cycle cut, then the closure. */
  #run(ref: MemberRef, id: string, depth: number): WalkResult {
    const e = this.#entry(ref.slot, id);
    const memo = this.#memo;
    const decided = memo.recall(e, depth);
    if (decided !== -1) return decided as WalkResult;
    const path = this.#path;
    if (path.cuts(e)) return FALSE;
    const at = path.length;
    // the walk recurses on the JS stack: nesting is bounded whatever the request's depth
    if (at >= MAX_NESTING) return this.fail(new PembaError("ERROR_CODE_DEPTH_NOT_ENOUGH"));
    const outer = path.enter(e);
    const result = ref.evaluate(this, id, depth - 1);
    if (path.leave(at, outer) && (result === TRUE || result === FALSE)) memo.remember(e, depth, result);
    return result;
  }

  /** The member `type#name`: a relation, permission or attribute, or a rule called by name. */
  member(type: string, name: string): MemberRef | undefined {
    return this.schema.entities.get(type)?.refs.get(name);
  }

  tuples(type: string, id: string, relation: string): readonly Tuple[] | undefined {
    return this.relation(this.#entries.readRef(type, relation), id);
  }

  relation(ref: ReadRef, id: string): readonly Tuple[] | undefined {
    return this.#reads.tuples(this.#entry(ref.slot, id), ref, id);
  }

  /** The stored attribute (null when missing); undefined while not loaded. */
  storedAttribute(type: string, id: string, name: string): Attribute | null | undefined {
    const ref = this.#entries.readRef(type, name);
    return this.#reads.attribute(this.#entry(ref.slot, id), ref, id);
  }

  contextAttribute(type: string, id: string, name: string): Attribute | undefined {
    return this.#context?.attribute(type, id, name);
  }

  booleanAttribute(type: string, id: string, name: string): WalkResult {
    return this.attribute(this.#entries.readRef(type, name), id);
  }

  attribute(ref: ReadRef, id: string): WalkResult {
    let attribute: Attribute | null | undefined;
    const context = this.#context;
    if (context !== undefined) attribute = context.attribute(ref.type, id, ref.name);
    if (attribute === undefined) attribute = this.#reads.attribute(this.#entry(ref.slot, id), ref, id);
    if (attribute === undefined) return PENDING;
    if (attribute === null) return FALSE;
    if (attribute.value.type !== "ATTRIBUTE_TYPE_BOOLEAN")
      return this.fail(new PembaError("ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH"));
    return attribute.value.data === true ? TRUE : FALSE;
  }

  callRule(rule: CompiledRule, type: string, id: string): WalkResult {
    return this.#rules.call(this, rule, type, id);
  }

  callRuleByName(rule: CompiledRule): WalkResult {
    return callRuleByName(this, rule);
  }

  /** Loads every queued read: one store call per kind. Undefined when done synchronously. */
  load(): Promise<void> | undefined {
    return this.#reads.load(this.#entries);
  }
}

/**
 * The engine's one loop: runs `step` until its answer is not `pending`, loading the reads it queued (one store call
 * per kind) between tries. Awaits only when the store answered with a promise. Every operation settles through it:
 * a pass of check, bulk check or explain (pending: PENDING), a read of expand or lookup-subject (pending: undefined).
 */
export function settle<R, P extends R>(
  evaluation: Evaluation,
  step: () => R,
  pending: P,
): Exclude<R, P> | Promise<Exclude<R, P>> {
  for (;;) {
    const result = step();
    if (result !== pending) return result as Exclude<R, P>;
    const loading = evaluation.load();
    if (loading !== undefined) return loading.then(() => settle(evaluation, step, pending));
  }
}

/** A decision pass until decided: settle with Permify's check_count counted afresh for each pass. */
export function settlePass(evaluation: Evaluation, pass: () => WalkResult): WalkResult | Promise<WalkResult> {
  return settle(
    evaluation,
    () => {
      evaluation.checkCount = 0;
      return pass();
    },
    PENDING,
  );
}

export { subjectKey } from "./memo.ts";
export { FAILED, FALSE, MAX_NESTING, PENDING, TRUE };
