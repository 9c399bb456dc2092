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
  type MemberRef,
  PENDING,
  type ReadRef,
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
/** A read queued for the next batch (in the read column of the entry table). */
const QUEUED: object = Object.freeze({});
/** Entries kept in plain arrays (linear scan) before an index by slot and id is built. */
const SMALL = 32;

/**
 * The most sub-checks nested in one walk (the path length). Each level takes a few JS stack frames, and Node's
 * default stack holds about 3,000 levels; deeper chains answer ERROR_CODE_DEPTH_NOT_ENOUGH, like an exhausted depth.
 */
export const MAX_NESTING = 1000;

/** `data` of a request without context (rules only read it). */
const NO_DATA: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

const readKey = (type: string, id: string, name: string) => `${type}\u0000${id}\u0000${name}`;

/**
 * The per-request tables are keyed by entry: one (slot, id) pair, where the slot names `type#name` (see ReadRef).
 * Columns: the read (tuples, attribute or null, QUEUED, undefined when never asked) and, per subject, the memo
 * (`depth * 2 + result` of a decided sub-problem; -1 or missing when none).
 */
export class Evaluation implements Walk {
  // Fields with "!" hold the state of one question: `reset` (also run by the constructor) sets every one of them.
  schema!: CompiledSchema;
  store!: Store;
  tenantId!: string;
  snap!: number;
  data!: Record<string, unknown>;
  subject!: Subject;
  /** Invocations in the latest pass (Permify's check_count: not a stable contract). */
  checkCount!: number;
  /** The latest engine error; a FAILED result refers to it. */
  error!: unknown;

  // the entry table: entries 0 .. #n - 1 (the arrays may be longer: `reset` keeps their capacity, and every
  // column of an entry is written when the entry is added)
  #n!: number;
  readonly #slots: number[] = [];
  readonly #ids: string[] = [];
  readonly #reads: unknown[] = [];
  #memo: number[] = [];
  #bySlot!: (Map<string, number> | undefined)[] | undefined;
  #memoBySubject!: Map<string, number[]> | undefined;
  /** Entries of the sub-problems on the current walk path (short: a linear scan beats a Map here). */
  readonly #path: number[] = [];
  #cut!: number;
  /** Refs of names the compiled schema does not know (slots after the schema's). */
  #extraRefs!: Map<string, ReadRef> | undefined;
  #extraSlots!: ReadRef[] | undefined;

  /** Read directly (no batching) when the store has answered synchronously before: nothing to save. */
  #direct!: boolean;
  #rules!: Map<string, WalkResult> | undefined;
  #pendingTuples: number[] = [];
  #pendingAttributes: number[] = [];
  #contextTuples!: Map<string, Tuple[]> | undefined;
  #contextAttributes!: Map<string, Attribute> | undefined;
  /** Store calls made (for tests and tuning). */
  storeCalls!: number;

  constructor(schema: CompiledSchema, target: EvaluationTarget, subject: Subject) {
    this.reset(schema, target, subject);
  }

  /** Entries in the table (distinct (slot, id) pairs asked about). */
  get entries(): number {
    return this.#n;
  }

  /**
   * Starts the evaluation of a question. On a used evaluation this empties it, keeping the tables' arrays: a check
   * that finished synchronously hands its evaluation to the next one (see `check`).
   */
  reset(schema: CompiledSchema, target: EvaluationTarget, subject: Subject): void {
    this.checkCount = 0;
    this.error = undefined;
    this.#n = 0;
    if (this.#memoBySubject !== undefined) this.#memo = [];
    this.#bySlot = undefined;
    this.#memoBySubject = undefined;
    // emptied only when not empty: setting an array's length is a runtime call in V8
    if (this.#path.length !== 0) this.#path.length = 0;
    this.#cut = Number.POSITIVE_INFINITY;
    this.#extraRefs = undefined;
    this.#extraSlots = undefined;
    this.#rules = undefined;
    if (this.#pendingTuples.length !== 0) this.#pendingTuples.length = 0;
    if (this.#pendingAttributes.length !== 0) this.#pendingAttributes.length = 0;
    this.#contextTuples = undefined;
    this.#contextAttributes = undefined;
    this.storeCalls = 0;
    this.schema = schema;
    this.store = target.store;
    this.tenantId = target.tenantId;
    this.snap = target.snap;
    const ctx: Context | undefined = target.context;
    this.data = (ctx?.data as Record<string, unknown>) ?? NO_DATA;
    this.subject = subject;
    this.#direct = synchronousStores.has(this.store);
    if (ctx && ctx.tuples.length > 0) {
      const tuples = new Map<string, Tuple[]>();
      // one set of every tuple seen: de-duplication stays linear when many tuples share a read
      const seen = new Set<string>();
      for (const t of ctx.tuples) {
        const key = tupleKey(t);
        if (seen.has(key)) continue;
        seen.add(key);
        const k = readKey(t.entity.type, t.entity.id, t.relation);
        const list = tuples.get(k);
        if (list) list.push(t);
        else tuples.set(k, [t]);
      }
      this.#contextTuples = tuples;
    }
    if (ctx && ctx.attributes.length > 0) {
      const attributes = new Map<string, Attribute>();
      // Permify reads the first contextual value of an entity's attribute; later duplicates are ignored
      for (const a of ctx.attributes) {
        const key = readKey(a.entity.type, a.entity.id, a.attribute);
        if (!attributes.has(key)) attributes.set(key, a);
      }
      this.#contextAttributes = attributes;
    }
  }

  /** Switches the question's subject (bulk check, lookup-subject); each subject keeps its own memo. */
  setSubject(subject: Subject): void {
    const key = subjectKey(subject);
    if (this.#memoBySubject === undefined) {
      // entries added from now on are not cleared in this memo while another subject's is current
      this.#memo.length = this.#n;
      this.#memoBySubject = new Map();
      this.#memoBySubject.set(subjectKey(this.subject), this.#memo);
    }
    let memo = this.#memoBySubject.get(key);
    if (!memo) {
      memo = [];
      this.#memoBySubject.set(key, memo);
    }
    this.#memo = memo;
    this.subject = subject;
  }

  fail(error: unknown): WalkResult {
    this.error = error;
    return FAILED;
  }

  /** The entry of (slot, id), added when missing. */
  #entry(slot: number, id: string): number {
    const slots = this.#slots;
    const ids = this.#ids;
    const n = this.#n;
    const bySlot = this.#bySlot;
    if (bySlot === undefined) {
      for (let i = 0; i < n; i++) if (slots[i] === slot && ids[i] === id) return i;
      this.#add(slot, id);
      if (n + 1 >= SMALL) this.#index();
      return n;
    }
    let byId = bySlot[slot];
    if (byId === undefined) {
      byId = new Map();
      bySlot[slot] = byId;
    }
    const found = byId.get(id);
    if (found !== undefined) return found;
    this.#add(slot, id);
    byId.set(id, n);
    return n;
  }

  /** Appends entry #n (every column, over whatever an earlier question left there). */
  #add(slot: number, id: string): void {
    const e = this.#n++;
    if (e === this.#slots.length) {
      this.#slots.push(slot);
      this.#ids.push(id);
      this.#reads.push(undefined);
    } else {
      this.#slots[e] = slot;
      this.#ids[e] = id;
      this.#reads[e] = undefined;
    }
    this.#memo[e] = -1;
  }

  #index(): void {
    const bySlot: (Map<string, number> | undefined)[] = [];
    const slots = this.#slots;
    const ids = this.#ids;
    for (let i = 0; i < this.#n; i++) {
      let byId = bySlot[slots[i]];
      if (byId === undefined) {
        byId = new Map();
        bySlot[slots[i]] = byId;
      }
      byId.set(ids[i], i);
    }
    this.#bySlot = bySlot;
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
    const m = memo[e];
    if (m !== undefined && m >= 0 && m >> 1 <= depth) return (m & 1) as WalkResult;
    const path = this.#path;
    const at = path.indexOf(e);
    if (at !== -1) {
      if (at < this.#cut) this.#cut = at;
      return FALSE;
    }
    const index = path.length;
    // the walk recurses on the JS stack: nesting is bounded whatever the request's depth
    if (index >= MAX_NESTING) return this.fail(new PembaError("ERROR_CODE_DEPTH_NOT_ENOUGH"));
    path.push(e);
    const outerCut = this.#cut;
    this.#cut = Number.POSITIVE_INFINITY;
    const result = ref.evaluate(this, id, depth - 1);
    path.pop();
    const innerCut = this.#cut;
    if (innerCut >= index) {
      if (result === TRUE || result === FALSE) memo[e] = depth * 2 + result;
      this.#cut = outerCut;
    } else this.#cut = Math.min(innerCut, outerCut);
    return result;
  }

  /** The member `type#name`: a relation, permission or attribute, or a rule called by name. */
  member(type: string, name: string): MemberRef | undefined {
    return this.schema.entities.get(type)?.refs.get(name);
  }

  /** The ref of a read by name (a slot of its own when the schema has no such member). */
  #readRef(type: string, name: string): ReadRef {
    const ref = this.schema.entities.get(type)?.refs.get(name);
    if (ref !== undefined) return ref;
    if (this.#extraRefs === undefined || this.#extraSlots === undefined) {
      this.#extraRefs = new Map();
      this.#extraSlots = [];
    }
    const key = readKey(type, "", name);
    let extra = this.#extraRefs.get(key);
    if (extra === undefined) {
      extra = {
        slot: this.schema.slots.length + this.#extraSlots.length,
        type,
        name,
        tupleScratch: undefined,
        attributeScratch: undefined,
      };
      this.#extraRefs.set(key, extra);
      this.#extraSlots.push(extra);
    }
    return extra;
  }

  tuples(type: string, id: string, relation: string): readonly Tuple[] | undefined {
    return this.relation(this.#readRef(type, relation), id);
  }

  relation(ref: ReadRef, id: string): readonly Tuple[] | undefined {
    const e = this.#entry(ref.slot, id);
    const read = this.#reads[e];
    if (read !== undefined) return read === QUEUED ? undefined : (read as readonly Tuple[]);
    if (this.#direct) {
      let query = ref.tupleScratch;
      if (query === undefined) {
        query = [{ entityType: ref.type, entityIds: [id], relations: [ref.name] }];
        ref.tupleScratch = query;
      } else query[0].entityIds[0] = id;
      this.storeCalls++;
      const rows = this.store.queryTuples(this.tenantId, this.snap, query);
      if (!(rows instanceof Promise)) {
        const tuples =
          this.#contextTuples === undefined
            ? rows
            : mergeContext(rows, this.#contextTuples.get(readKey(ref.type, id, ref.name)));
        this.#reads[e] = tuples;
        return tuples;
      }
      // The store may still read the query: never reuse it.
      ref.tupleScratch = undefined;
      rows.catch(() => {});
      this.#direct = false;
    }
    this.#reads[e] = QUEUED;
    this.#pendingTuples.push(e);
    return undefined;
  }

  /** The stored attribute (null when missing); undefined while not loaded. */
  storedAttribute(type: string, id: string, name: string): Attribute | null | undefined {
    return this.#stored(this.#readRef(type, name), id);
  }

  #stored(ref: ReadRef, id: string): Attribute | null | undefined {
    const e = this.#entry(ref.slot, id);
    const read = this.#reads[e];
    if (read !== undefined) return read === QUEUED ? undefined : (read as Attribute | null);
    if (this.#direct) {
      let query = ref.attributeScratch;
      if (query === undefined) {
        query = [{ entityType: ref.type, entityIds: [id], attributes: [ref.name] }];
        ref.attributeScratch = query;
      } else (query[0].entityIds as string[])[0] = id;
      this.storeCalls++;
      const rows = this.store.queryAttributes(this.tenantId, this.snap, query);
      if (!(rows instanceof Promise)) {
        const attribute = rows.length > 0 ? rows[0] : null;
        this.#reads[e] = attribute;
        return attribute;
      }
      ref.attributeScratch = undefined;
      rows.catch(() => {});
      this.#direct = false;
    }
    this.#reads[e] = QUEUED;
    this.#pendingAttributes.push(e);
    return undefined;
  }

  contextAttribute(type: string, id: string, name: string): Attribute | undefined {
    return this.#contextAttributes?.get(readKey(type, id, name));
  }

  booleanAttribute(type: string, id: string, name: string): WalkResult {
    return this.attribute(this.#readRef(type, name), id);
  }

  attribute(ref: ReadRef, id: string): WalkResult {
    let attribute: Attribute | null | undefined;
    if (this.#contextAttributes !== undefined)
      attribute = this.#contextAttributes.get(readKey(ref.type, id, ref.name));
    if (attribute === undefined) attribute = this.#stored(ref, id);
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

  callRuleByName(rule: CompiledRule): WalkResult {
    try {
      return rule.evaluateUnbound(this.data) ? TRUE : FALSE;
    } catch (e) {
      return this.fail(e);
    }
  }

  /** The ref (type, name) of an entry's slot. */
  #refOf(slot: number): ReadRef {
    const slots = this.schema.slots;
    return slot < slots.length ? slots[slot] : (this.#extraSlots as ReadRef[])[slot - slots.length];
  }

  /** Loads every queued read: one store call per kind. Undefined when done synchronously. */
  load(): Promise<void> | undefined {
    const tuples = this.#pendingTuples;
    const attributes = this.#pendingAttributes;
    if (tuples.length === 0 && attributes.length === 0)
      throw new PembaError("ERROR_CODE_INTERNAL", "evaluation pending without reads");
    this.#pendingTuples = [];
    this.#pendingAttributes = [];
    let tupleRows: Tuple[] | Promise<Tuple[]> | undefined;
    let attributeRows: Attribute[] | Promise<Attribute[]> | undefined;
    const store = this.store;
    if (tuples.length > 0 && attributes.length > 0 && store.queryTuplesAndAttributes !== undefined) {
      // one round trip for the level instead of two
      this.storeCalls++;
      const both = store.queryTuplesAndAttributes(
        this.tenantId,
        this.snap,
        this.#queries(tuples, false) as TupleQuery[],
        this.#queries(attributes, true) as AttributeQuery[],
      );
      if (both instanceof Promise) {
        return both.then(([t, a]) => {
          this.#fillTuples(tuples, t);
          this.#fillAttributes(attributes, a);
        });
      }
      synchronousStores.add(store);
      this.#fillTuples(tuples, both[0]);
      this.#fillAttributes(attributes, both[1]);
      return undefined;
    }
    if (tuples.length > 0) {
      this.storeCalls++;
      tupleRows = this.store.queryTuples(
        this.tenantId,
        this.snap,
        this.#queries(tuples, false) as TupleQuery[],
      );
    }
    if (attributes.length > 0) {
      this.storeCalls++;
      attributeRows = this.store.queryAttributes(
        this.tenantId,
        this.snap,
        this.#queries(attributes, true) as AttributeQuery[],
      );
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

  /** One query per slot (entity type and name) with every id wanted. */
  #queries(entries: number[], attributes: boolean): (TupleQuery | AttributeQuery)[] {
    const groups = new Map<number, { entityType: string; entityIds: string[]; names: string[] }>();
    for (const e of entries) {
      const slot = this.#slots[e];
      const group = groups.get(slot);
      if (group) group.entityIds.push(this.#ids[e]);
      else {
        const ref = this.#refOf(slot);
        groups.set(slot, { entityType: ref.type, entityIds: [this.#ids[e]], names: [ref.name] });
      }
    }
    const out: (TupleQuery | AttributeQuery)[] = [];
    for (const g of groups.values())
      out.push(
        attributes
          ? { entityType: g.entityType, entityIds: g.entityIds, attributes: g.names }
          : { entityType: g.entityType, entityIds: g.entityIds, relations: g.names },
      );
    return out;
  }

  /** Entries by read key, for matching returned rows. */
  #keyed(entries: number[]): Map<string, number> {
    const byKey = new Map<string, number>();
    for (const e of entries) {
      const ref = this.#refOf(this.#slots[e]);
      byKey.set(readKey(ref.type, this.#ids[e], ref.name), e);
    }
    return byKey;
  }

  #fillTuples(entries: number[], rows: Tuple[]): void {
    const reads = this.#reads;
    for (const e of entries) reads[e] = EMPTY;
    const byKey = this.#keyed(entries);
    for (let i = 0; i < rows.length; i++) {
      const t = rows[i];
      const e = byKey.get(readKey(t.entity.type, t.entity.id, t.relation));
      if (e === undefined) continue;
      const list = reads[e] as readonly Tuple[];
      if (list === EMPTY) reads[e] = [t];
      else (list as Tuple[]).push(t);
    }
    const ctx = this.#contextTuples;
    if (ctx === undefined) return;
    for (const [key, e] of byKey) {
      const extra = ctx.get(key);
      if (extra) reads[e] = mergeContext(reads[e] as readonly Tuple[], extra);
    }
  }

  #fillAttributes(entries: number[], rows: Attribute[]): void {
    const reads = this.#reads;
    for (const e of entries) reads[e] = null;
    const byKey = this.#keyed(entries);
    for (let i = 0; i < rows.length; i++) {
      const a = rows[i];
      const e = byKey.get(readKey(a.entity.type, a.entity.id, a.attribute));
      if (e !== undefined) reads[e] = a;
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
