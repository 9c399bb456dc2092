/**
 * The reads of one request, cached per entry (the read column). A read that is not loaded yet is queued and
 * answers undefined (its branch is PENDING); `load` then loads every queued read with ONE store call per kind
 * (tuples, attributes), or one for both where the store has `queryTuplesAndAttributes`. A store known to answer
 * synchronously is read directly instead, one small call per read: batching would save nothing.
 */
import type { ReadRef } from "../../compile/index.ts";
import { PembaError } from "../../errors.ts";
import type { Attribute, Tuple } from "../../model.ts";
import type { EngineStore } from "../../store/capabilities.ts";
import type { AttributeQuery, Snap, TupleQuery } from "../../store/store.ts";
import { type ContextualData, readKey } from "./context.ts";
import type { EntryTable } from "./entries.ts";

const EMPTY: readonly Tuple[] = Object.freeze([]) as readonly Tuple[];
/** A read queued for the next batch (in the read column). */
const QUEUED: object = Object.freeze({});

const oneRead = (): TupleQuery[] => [{ entityType: "", entityIds: [""], relations: [""] }];
const oneAttributeRead = (): AttributeQuery[] => [{ entityType: "", entityIds: [""], attributes: [""] }];

export class ReadBatch {
  store!: EngineStore;
  tenantId!: string;
  snap!: Snap;
  /** The evaluation time: rows expired at it are absent. */
  at = 0;
  /** Store calls made (for tests and tuning). */
  storeCalls = 0;
  /** Per entry: tuples, an attribute or null, QUEUED; undefined when never asked. */
  readonly #column: unknown[] = [];
  #pendingTuples: number[] = [];
  #pendingAttributes: number[] = [];
  #context: ContextualData | undefined = undefined;
  /** Read directly (no batching): the store is known to answer synchronously. */
  #direct = false;
  /** Called when the store answered a batch synchronously. */
  #onSynchronous: ((store: EngineStore) => void) | undefined = undefined;
  /** One-read queries for direct reads, rewritten per read (replaced once handed to a store's promise). */
  #tupleQuery: TupleQuery[] = oneRead();
  #attributeQuery: AttributeQuery[] = oneAttributeRead();

  reset(
    store: EngineStore,
    tenantId: string,
    snap: Snap,
    at: number,
    context: ContextualData | undefined,
    direct: boolean,
    onSynchronous: ((store: EngineStore) => void) | undefined,
  ): void {
    this.store = store;
    this.tenantId = tenantId;
    this.snap = snap;
    this.at = at;
    this.storeCalls = 0;
    this.#context = context;
    this.#direct = direct;
    this.#onSynchronous = onSynchronous;
    if (this.#pendingTuples.length !== 0) this.#pendingTuples.length = 0;
    if (this.#pendingAttributes.length !== 0) this.#pendingAttributes.length = 0;
  }

  /** A new entry (see EntryTable): never read, over whatever an earlier question left there. */
  add(e: number): void {
    const column = this.#column;
    if (e === column.length) column.push(undefined);
    else column[e] = undefined;
  }

  /** Stored ∪ contextual tuples of entry `e` (`ref` on `id`); undefined while not loaded. */
  tuples(e: number, ref: ReadRef, id: string): readonly Tuple[] | undefined {
    const read = this.#column[e];
    if (read !== undefined) return read === QUEUED ? undefined : (read as readonly Tuple[]);
    if (this.#direct) {
      const query = this.#tupleQuery;
      const q = query[0];
      q.entityType = ref.type;
      q.entityIds[0] = id;
      q.relations[0] = ref.name;
      this.storeCalls++;
      const rows = this.store.queryTuples(this.tenantId, this.snap, query, this.at);
      if (!(rows instanceof Promise)) {
        const context = this.#context;
        const tuples =
          context === undefined || !context.hasTuples
            ? rows
            : context.merge(rows, readKey(ref.type, id, ref.name));
        this.#column[e] = tuples;
        return tuples;
      }
      // The store may still read the query: never reuse it.
      this.#tupleQuery = oneRead();
      rows.catch(() => {});
      this.#direct = false;
    }
    this.#column[e] = QUEUED;
    this.#pendingTuples.push(e);
    return undefined;
  }

  /** The stored attribute of entry `e` (null when missing); undefined while not loaded. */
  attribute(e: number, ref: ReadRef, id: string): Attribute | null | undefined {
    const read = this.#column[e];
    if (read !== undefined) return read === QUEUED ? undefined : (read as Attribute | null);
    if (this.#direct) {
      const query = this.#attributeQuery;
      const q = query[0];
      q.entityType = ref.type;
      (q.entityIds as string[])[0] = id;
      q.attributes[0] = ref.name;
      this.storeCalls++;
      const rows = this.store.queryAttributes(this.tenantId, this.snap, query, this.at);
      if (!(rows instanceof Promise)) {
        const attribute = rows.length > 0 ? rows[0] : null;
        this.#column[e] = attribute;
        return attribute;
      }
      this.#attributeQuery = oneAttributeRead();
      rows.catch(() => {});
      this.#direct = false;
    }
    this.#column[e] = QUEUED;
    this.#pendingAttributes.push(e);
    return undefined;
  }

  /** Loads every queued read: one store call per kind. Undefined when done synchronously. */
  load(entries: EntryTable): Promise<void> | undefined {
    const tuples = this.#pendingTuples;
    const attributes = this.#pendingAttributes;
    if (tuples.length === 0 && attributes.length === 0)
      throw new PembaError("ERROR_CODE_INTERNAL", "evaluation pending without reads");
    this.#pendingTuples = [];
    this.#pendingAttributes = [];
    let tupleRows: readonly Tuple[] | Promise<readonly Tuple[]> | undefined;
    let attributeRows: readonly Attribute[] | Promise<readonly Attribute[]> | undefined;
    const store = this.store;
    if (tuples.length > 0 && attributes.length > 0 && store.queryTuplesAndAttributes !== undefined) {
      // one round trip for the level instead of two
      this.storeCalls++;
      const both = store.queryTuplesAndAttributes(
        this.tenantId,
        this.snap,
        queries(entries, tuples, false) as TupleQuery[],
        queries(entries, attributes, true) as AttributeQuery[],
        this.at,
      );
      if (both instanceof Promise) {
        return both.then(([t, a]) => {
          this.#fillTuples(entries, tuples, t);
          this.#fillAttributes(entries, attributes, a);
        });
      }
      this.#onSynchronous?.(store);
      this.#fillTuples(entries, tuples, both[0]);
      this.#fillAttributes(entries, attributes, both[1]);
      return undefined;
    }
    if (tuples.length > 0) {
      this.storeCalls++;
      tupleRows = store.queryTuples(
        this.tenantId,
        this.snap,
        queries(entries, tuples, false) as TupleQuery[],
        this.at,
      );
    }
    if (attributes.length > 0) {
      this.storeCalls++;
      attributeRows = store.queryAttributes(
        this.tenantId,
        this.snap,
        queries(entries, attributes, true) as AttributeQuery[],
        this.at,
      );
    }
    if (tupleRows instanceof Promise || attributeRows instanceof Promise) {
      return Promise.all([tupleRows, attributeRows]).then(([t, a]) => {
        if (t) this.#fillTuples(entries, tuples, t);
        if (a) this.#fillAttributes(entries, attributes, a);
      });
    }
    this.#onSynchronous?.(store);
    if (tupleRows) this.#fillTuples(entries, tuples, tupleRows);
    if (attributeRows) this.#fillAttributes(entries, attributes, attributeRows);
    return undefined;
  }

  #fillTuples(entries: EntryTable, pending: number[], rows: readonly Tuple[]): void {
    const column = this.#column;
    for (const e of pending) column[e] = EMPTY;
    const byKey = keyed(entries, pending);
    for (let i = 0; i < rows.length; i++) {
      const t = rows[i];
      const e = byKey.get(readKey(t.entity.type, t.entity.id, t.relation));
      if (e === undefined) continue;
      const list = column[e] as readonly Tuple[];
      if (list === EMPTY) column[e] = [t];
      else (list as Tuple[]).push(t);
    }
    const context = this.#context;
    if (context === undefined || !context.hasTuples) return;
    for (const [key, e] of byKey) column[e] = context.merge(column[e] as readonly Tuple[], key);
  }

  #fillAttributes(entries: EntryTable, pending: number[], rows: readonly Attribute[]): void {
    const column = this.#column;
    for (const e of pending) column[e] = null;
    const byKey = keyed(entries, pending);
    for (let i = 0; i < rows.length; i++) {
      const a = rows[i];
      const e = byKey.get(readKey(a.entity.type, a.entity.id, a.attribute));
      if (e !== undefined) column[e] = a;
    }
  }
}

/** One query per slot (entity type and name) with every id wanted. */
function queries(
  entries: EntryTable,
  pending: number[],
  attributes: boolean,
): (TupleQuery | AttributeQuery)[] {
  const groups = new Map<number, { entityType: string; entityIds: string[]; names: string[] }>();
  for (const e of pending) {
    const slot = entries.slots[e];
    const group = groups.get(slot);
    if (group) group.entityIds.push(entries.ids[e]);
    else {
      const ref = entries.refOf(slot);
      groups.set(slot, { entityType: ref.type, entityIds: [entries.ids[e]], names: [ref.name] });
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
function keyed(entries: EntryTable, pending: number[]): Map<string, number> {
  const byKey = new Map<string, number>();
  for (const e of pending) {
    const ref = entries.refOf(entries.slots[e]);
    byKey.set(readKey(ref.type, entries.ids[e], ref.name), e);
  }
  return byKey;
}
