/**
 * One request's evaluation state: the subject, reads (batched per pass, cached for the request), the memo of
 * decided sub-problems, and the current walk path for cycle detection.
 *
 * A pass walks the compiled closures; a read that is not loaded yet makes its branch PENDING and is queued. When a
 * pass ends undecided, every queued read is loaded with ONE store call per kind (tuples, attributes) and the pass
 * re-runs; decided sub-problems are memoized, so each pass effectively goes one level deeper. With a synchronous
 * store (memory, better-sqlite3) nothing is awaited.
 *
 * Cycles: a sub-problem already on the current path cannot grant, so it answers FALSE there (the least fixpoint).
 * A result computed under such a cut is memoized only when every cut it saw points at itself or deeper.
 */
import type { CompiledSchema } from "../compile/index.ts";
import {
  FAILED,
  FALSE,
  type MemberEvaluator,
  PENDING,
  TRUE,
  type Walk,
  type WalkResult,
} from "../compile/index.ts";
import { PembaError } from "../errors.ts";
import { type Attribute, type Context, type Subject, type Tuple, tupleKey } from "../model.ts";
import { type CompiledRule, type RuleArgument, ruleArgument, zeroArgument } from "../rules/index.ts";
import type { AttributeQuery, Store, TupleQuery } from "../store/store.ts";
import type { EvaluationTarget } from "./types.ts";

const EMPTY: readonly Tuple[] = Object.freeze([]) as readonly Tuple[];

interface Memo {
  value: WalkResult;
  depth: number;
}

interface PendingRead {
  type: string;
  id: string;
  name: string;
}

const readKey = (type: string, id: string, name: string) => `${type}\u0000${id}\u0000${name}`;

export class Evaluation implements Walk {
  readonly schema: CompiledSchema;
  readonly store: Store;
  readonly tenantId: string;
  readonly snap: number;
  readonly data: Record<string, unknown>;
  subject: Subject;
  /** Invocations in the latest pass (Permify's check_count: not a stable contract). */
  checkCount = 0;
  /** The latest engine error; a FAILED result refers to it. */
  error: unknown = undefined;

  #memo: Map<string, Memo> = new Map();
  #memoBySubject: Map<string, Map<string, Memo>> | undefined;
  /** Keys of the sub-problems on the current walk path (short: a linear scan beats a Map here). */
  readonly #path: string[] = [];
  #cut = Number.POSITIVE_INFINITY;

  /** Read directly (no batching) when the store has answered synchronously before: nothing to save. */
  #direct: boolean;
  readonly #tuples = new Map<string, readonly Tuple[]>();
  readonly #attributes = new Map<string, Attribute | null>();
  #rules: Map<string, WalkResult> | undefined;
  #pendingTuples: PendingRead[] = [];
  #pendingAttributes: PendingRead[] = [];
  readonly #pendingKeys = new Set<string>();
  readonly #contextTuples: Map<string, Tuple[]> | undefined;
  readonly #contextAttributes: Map<string, Attribute> | undefined;
  /** Store calls made (for tests and tuning). */
  storeCalls = 0;

  constructor(schema: CompiledSchema, target: EvaluationTarget, subject: Subject) {
    this.schema = schema;
    this.store = target.store;
    this.tenantId = target.tenantId;
    this.snap = target.snap;
    const ctx: Context | undefined = target.context;
    this.data = (ctx?.data as Record<string, unknown>) ?? {};
    this.subject = subject;
    this.#direct = synchronousStores.has(this.store);
    if (ctx && ctx.tuples.length > 0) {
      this.#contextTuples = new Map();
      for (const t of ctx.tuples) {
        const k = readKey(t.entity.type, t.entity.id, t.relation);
        const list = this.#contextTuples.get(k);
        if (list) {
          if (!list.some((o) => tupleKey(o) === tupleKey(t))) list.push(t);
        } else this.#contextTuples.set(k, [t]);
      }
    }
    if (ctx && ctx.attributes.length > 0) {
      this.#contextAttributes = new Map();
      for (const a of ctx.attributes)
        this.#contextAttributes.set(readKey(a.entity.type, a.entity.id, a.attribute), a);
    }
  }

  /** Switches the question's subject (bulk check, lookup-subject); each subject keeps its own memo. */
  setSubject(subject: Subject): void {
    const key = subjectKey(subject);
    if (this.#memoBySubject === undefined) {
      this.#memoBySubject = new Map();
      if (this.#memo.size > 0) this.#memoBySubject.set(subjectKey(this.subject), this.#memo);
    }
    let memo = this.#memoBySubject.get(key);
    if (!memo) {
      memo = new Map();
      this.#memoBySubject.set(key, memo);
    }
    this.#memo = memo;
    this.subject = subject;
  }

  fail(error: unknown): WalkResult {
    this.error = error;
    return FAILED;
  }

  invoke(type: string, id: string, name: string, depth: number): WalkResult {
    this.checkCount++;
    if (depth < 0) return this.fail(new PembaError("ERROR_CODE_DEPTH_NOT_ENOUGH"));
    const s = this.subject;
    if (s.relation === name && s.id === id && s.type === type) return TRUE;
    const key = `${type}:${id}#${name}`;
    const memo = this.#memo.get(key);
    if (memo !== undefined && memo.depth <= depth) return memo.value;
    const path = this.#path;
    const at = path.indexOf(key);
    if (at !== -1) {
      if (at < this.#cut) this.#cut = at;
      return FALSE;
    }
    const evaluate = this.member(type, name);
    if (evaluate === undefined) return this.fail(new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND"));
    const index = path.length;
    path.push(key);
    const outerCut = this.#cut;
    this.#cut = Number.POSITIVE_INFINITY;
    const result = evaluate(this, id, depth - 1);
    path.pop();
    const innerCut = this.#cut;
    if (innerCut >= index) {
      if (result === TRUE || result === FALSE) this.#memo.set(key, { value: result, depth });
      this.#cut = outerCut;
    } else this.#cut = Math.min(innerCut, outerCut);
    return result;
  }

  /** The closure for `type#name`: a relation, permission or attribute, or a rule called by name. */
  member(type: string, name: string): MemberEvaluator | undefined {
    const entity = this.schema.entities.get(type);
    if (entity === undefined) return undefined;
    const evaluate = entity.members.get(name);
    if (evaluate !== undefined) return evaluate;
    const rule = this.schema.rules.get(name);
    if (rule === undefined) return undefined;
    return (walk, id) => walk.callRule(rule, type, id);
  }

  tuples(type: string, id: string, relation: string): readonly Tuple[] | undefined {
    if (this.#direct) {
      this.storeCalls++;
      const rows = this.store.queryTuples(this.tenantId, this.snap, [
        { entityType: type, entityIds: [id], relations: [relation] },
      ]);
      if (!(rows instanceof Promise)) {
        if (this.#contextTuples === undefined) return rows;
        return mergeContext(rows, this.#contextTuples.get(readKey(type, id, relation)));
      }
      this.#direct = false;
    }
    const key = readKey(type, id, relation);
    const cached = this.#tuples.get(key);
    if (cached !== undefined) return cached;
    if (!this.#pendingKeys.has(key)) {
      this.#pendingKeys.add(key);
      this.#pendingTuples.push({ type, id, name: relation });
    }
    return undefined;
  }

  /** The stored attribute (null when missing); undefined while not loaded. */
  storedAttribute(type: string, id: string, name: string): Attribute | null | undefined {
    if (this.#direct) {
      this.storeCalls++;
      const rows = this.store.queryAttributes(this.tenantId, this.snap, [
        { entityType: type, entityIds: [id], attributes: [name] },
      ]);
      if (!(rows instanceof Promise)) return rows.length > 0 ? rows[0] : null;
      this.#direct = false;
    }
    const key = readKey(type, id, name);
    const cached = this.#attributes.get(key);
    if (cached !== undefined) return cached;
    const pendingKey = `$${key}`;
    if (!this.#pendingKeys.has(pendingKey)) {
      this.#pendingKeys.add(pendingKey);
      this.#pendingAttributes.push({ type, id, name });
    }
    return undefined;
  }

  contextAttribute(type: string, id: string, name: string): Attribute | undefined {
    return this.#contextAttributes?.get(readKey(type, id, name));
  }

  booleanAttribute(type: string, id: string, name: string): WalkResult {
    const attribute = this.contextAttribute(type, id, name) ?? this.storedAttribute(type, id, name);
    if (attribute === undefined) return PENDING;
    if (attribute === null) return FALSE;
    if (attribute.value.type !== "ATTRIBUTE_TYPE_BOOLEAN")
      return this.fail(new PembaError("ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH"));
    return attribute.value.data === true ? TRUE : FALSE;
  }

  callRule(rule: CompiledRule, type: string, id: string): WalkResult {
    const cacheKey = `${rule.name}\u0000${type}\u0000${id}`;
    if (this.#rules === undefined) this.#rules = new Map();
    const cached = this.#rules.get(cacheKey);
    if (cached !== undefined) return cached;
    const params = rule.parameters;
    let pending = false;
    for (let i = 0; i < params.length; i++) {
      if (this.storedAttribute(type, id, params[i].name) === undefined) pending = true;
    }
    if (pending) return PENDING;
    const args: RuleArgument[] = [];
    for (let i = 0; i < params.length; i++) {
      const p = params[i];
      const a = this.storedAttribute(type, id, p.name) ?? this.contextAttribute(type, id, p.name);
      args.push(a ? ruleArgument(p.type, a.value.data) : zeroArgument(p.type));
    }
    let result: WalkResult;
    try {
      result = rule.evaluate(args, this.data) ? TRUE : FALSE;
    } catch (e) {
      return this.fail(e);
    }
    this.#rules?.set(cacheKey, result);
    return result;
  }

  /** Loads every queued read: one store call per kind. Undefined when done synchronously. */
  load(): Promise<void> | undefined {
    const tuples = this.#pendingTuples;
    const attributes = this.#pendingAttributes;
    if (tuples.length === 0 && attributes.length === 0)
      throw new PembaError("ERROR_CODE_INTERNAL", "evaluation pending without reads");
    this.#pendingTuples = [];
    this.#pendingAttributes = [];
    this.#pendingKeys.clear();
    let tupleRows: Tuple[] | Promise<Tuple[]> | undefined;
    let attributeRows: Attribute[] | Promise<Attribute[]> | undefined;
    if (tuples.length > 0) {
      this.storeCalls++;
      tupleRows = this.store.queryTuples(this.tenantId, this.snap, tupleQueries(tuples));
    }
    if (attributes.length > 0) {
      this.storeCalls++;
      attributeRows = this.store.queryAttributes(this.tenantId, this.snap, attributeQueries(attributes));
    }
    if (tupleRows instanceof Promise || attributeRows instanceof Promise) {
      return Promise.all([tupleRows, attributeRows]).then(([t, a]) => {
        if (t) this.#fillTuples(tuples, t);
        if (a) this.#fillAttributes(attributes, a);
      });
    }
    synchronousStores.add(this.store);
    if (tupleRows) this.#fillTuples(tuples, tupleRows);
    if (attributeRows) this.#fillAttributes(attributes, attributeRows);
    return undefined;
  }

  #fillTuples(reads: PendingRead[], rows: Tuple[]): void {
    const cache = this.#tuples;
    for (let i = 0; i < reads.length; i++) {
      const r = reads[i];
      cache.set(readKey(r.type, r.id, r.name), EMPTY);
    }
    for (let i = 0; i < rows.length; i++) {
      const t = rows[i];
      const key = readKey(t.entity.type, t.entity.id, t.relation);
      const list = cache.get(key);
      if (list === undefined) continue;
      if (list === EMPTY) cache.set(key, [t]);
      else (list as Tuple[]).push(t);
    }
    const ctx = this.#contextTuples;
    if (ctx === undefined) return;
    for (let i = 0; i < reads.length; i++) {
      const r = reads[i];
      const key = readKey(r.type, r.id, r.name);
      const extra = ctx.get(key);
      if (extra) cache.set(key, mergeContext(cache.get(key) ?? EMPTY, extra));
    }
  }

  #fillAttributes(reads: PendingRead[], rows: Attribute[]): void {
    const cache = this.#attributes;
    for (let i = 0; i < reads.length; i++) {
      const r = reads[i];
      cache.set(readKey(r.type, r.id, r.name), null);
    }
    for (let i = 0; i < rows.length; i++) {
      const a = rows[i];
      const key = readKey(a.entity.type, a.entity.id, a.attribute);
      if (cache.has(key)) cache.set(key, a);
    }
  }
}

/**
 * Stores that answered a batch synchronously (memory, better-sqlite3). For them batching saves nothing, so later
 * evaluations read directly, one small call per read, with no pass re-runs.
 */
const synchronousStores = new WeakSet<object>();

/** Stored tuples ∪ contextual tuples of the same read, without duplicates. */
function mergeContext(stored: readonly Tuple[], extra: Tuple[] | undefined): readonly Tuple[] {
  if (extra === undefined) return stored;
  const seen = new Set(stored.map(tupleKey));
  const merged = [...stored];
  for (const t of extra) if (!seen.has(tupleKey(t))) merged.push(t);
  return merged;
}

export const subjectKey = (s: Subject): string => `${s.type}:${s.id}#${s.relation}`;

/** One TupleQuery per (entity type, relation) with every id wanted. */
function tupleQueries(reads: PendingRead[]): TupleQuery[] {
  if (reads.length === 1) {
    const r = reads[0];
    return [{ entityType: r.type, entityIds: [r.id], relations: [r.name] }];
  }
  const groups = new Map<string, TupleQuery>();
  for (const r of reads) {
    const k = `${r.type}\u0000${r.name}`;
    const q = groups.get(k);
    if (q) q.entityIds.push(r.id);
    else groups.set(k, { entityType: r.type, entityIds: [r.id], relations: [r.name] });
  }
  return [...groups.values()];
}

/** One AttributeQuery per (entity type, attribute) with every id wanted. */
function attributeQueries(reads: PendingRead[]): AttributeQuery[] {
  const groups = new Map<string, AttributeQuery & { entityIds: string[] }>();
  for (const r of reads) {
    const k = `${r.type}\u0000${r.name}`;
    const q = groups.get(k);
    if (q) q.entityIds.push(r.id);
    else groups.set(k, { entityType: r.type, entityIds: [r.id], attributes: [r.name] });
  }
  return [...groups.values()];
}

/** Runs passes until decided, loading reads between passes; awaits only when the store answered with a promise. */
export function settle(evaluation: Evaluation, pass: () => WalkResult): WalkResult | Promise<WalkResult> {
  for (;;) {
    evaluation.checkCount = 0;
    const result = pass();
    if (result !== PENDING) return result;
    const loading = evaluation.load();
    if (loading !== undefined) return loading.then(() => settle(evaluation, pass));
  }
}

export { FAILED, FALSE, PENDING, TRUE };
