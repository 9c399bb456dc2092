/**
 * ReadCache: the engine reads of ONE piece of work at ONE (tenant, snap, evaluation time), kept per key, so that a
 * key read once is never read again: (entity type, id, relation) -> its tuples, (entity type, id, attribute) -> the
 * attribute or none. The schema diff (service/schema-diff.ts) asks the same entities under two schemas, over many
 * batches, after walking them: on a SQL store each of those reads is a statement, and most are repeats.
 *
 * Only for a caller that reads one tenant at one snap and one evaluation time (the diff's scope): the key leaves
 * them out. A key asked twice in one call is read once; found in the cache, its rows come back once per asking. Reads the cache cannot answer per key (attributes of every entity of a type, reads by subject, ids)
 * go to the inner store unchanged.
 */
import type { Attribute, Tuple } from "../../model.ts";
import type { AttributeQuery, MaybePromise, Snap, Store, TupleQuery } from "../store.ts";
import { both } from "../types.ts";
import { ForwardingStore } from "./forwarding.ts";

/** (type, relation or attribute) -> entity id -> what the inner store answered. */
type Table<V> = Map<string, Map<string, V>>;

const group = (type: string, name: string) => `${type}\u0000${name}`;

function slot<V>(table: Table<V>, type: string, name: string): Map<string, V> {
  const g = group(type, name);
  let ids = table.get(g);
  if (ids === undefined) {
    ids = new Map();
    table.set(g, ids);
  }
  return ids;
}

/** A read split into what the cache holds and what the inner store must answer. */
interface Split<Q, R> {
  /** Rows of the keys found in the cache. */
  hits: R[];
  /** The keys not cached, as queries (one per entity type and relation or attribute). */
  missing: Q[];
}

export class ReadCache extends ForwardingStore {
  readonly #tuples: Table<Tuple[]> = new Map();
  readonly #attributes: Table<Attribute | null> = new Map();
  /** Keys filed as empty when asked, filled when the inner store answers; dropped if it fails. */
  #pending: (() => void)[] = [];
  /** A call is waiting for the inner store: an overlapping call goes to the inner store uncached. */
  #busy = false;
  /** Keys the inner store was asked (for tests and tuning). */
  innerKeys = 0;

  constructor(inner: Store) {
    super(inner);
  }

  /** Keys asked twice in one call are filed once (the second finds the first's entry, filled with it). */
  #splitTuples(queries: TupleQuery[]): Split<TupleQuery, Tuple> {
    const hits: Tuple[] = [];
    const missing: TupleQuery[] = [];
    for (const q of queries) {
      for (const relation of q.relations) {
        const ids = slot(this.#tuples, q.entityType, relation);
        let query: TupleQuery | undefined;
        for (const id of q.entityIds) {
          const rows = ids.get(id);
          if (rows !== undefined) {
            for (const t of rows) hits.push(t);
            continue;
          }
          ids.set(id, []);
          this.#pending.push(() => ids.delete(id));
          if (query === undefined) {
            query = { entityType: q.entityType, entityIds: [], relations: [relation] };
            missing.push(query);
          }
          query.entityIds.push(id);
          this.innerKeys++;
        }
      }
    }
    return { hits, missing };
  }

  #fileTuples(split: Split<TupleQuery, Tuple>, rows: readonly Tuple[]): Tuple[] {
    let ids: Map<string, Tuple[]> | undefined;
    let last = "";
    for (const t of rows) {
      const g = group(t.entity.type, t.relation);
      if (g !== last) {
        ids = this.#tuples.get(g);
        last = g;
      }
      ids?.get(t.entity.id)?.push(t);
      split.hits.push(t);
    }
    return split.hits;
  }

  /** Attribute reads by id split per key; reads of every entity of a type (no ids) go through whole, unfiled. */
  #splitAttributes(queries: AttributeQuery[]): Split<AttributeQuery, Attribute> {
    const hits: Attribute[] = [];
    const missing: AttributeQuery[] = [];
    for (const q of queries) {
      if (q.entityIds === undefined) {
        missing.push(q);
        continue;
      }
      for (const name of q.attributes) {
        const ids = slot(this.#attributes, q.entityType, name);
        let query: AttributeQuery | undefined;
        for (const id of q.entityIds) {
          const found = ids.get(id);
          if (found !== undefined) {
            if (found !== null) hits.push(found);
            continue;
          }
          ids.set(id, null);
          this.#pending.push(() => ids.delete(id));
          if (query === undefined) {
            query = { entityType: q.entityType, entityIds: [], attributes: [name] };
            missing.push(query);
          }
          query.entityIds!.push(id);
          this.innerKeys++;
        }
      }
    }
    return { hits, missing };
  }

  #fileAttributes(split: Split<AttributeQuery, Attribute>, rows: readonly Attribute[]): Attribute[] {
    for (const a of rows) {
      const ids = this.#attributes.get(group(a.entity.type, a.attribute));
      // a read of every entity of the type also returns keys nobody asked by id: those stay unfiled
      if (ids?.has(a.entity.id)) ids.set(a.entity.id, a);
      split.hits.push(a);
    }
    return split.hits;
  }

  /** Runs `read` (the inner store's answer to what missed) and files it; a failure unfiles the keys it was for. */
  #settle<T>(read: () => MaybePromise<T>, file: (rows: T) => T): MaybePromise<T> {
    const done = () => {
      this.#pending = [];
      this.#busy = false;
    };
    const fail = (e: unknown): never => {
      for (const unfile of this.#pending) unfile();
      done();
      throw e;
    };
    let rows: MaybePromise<T>;
    try {
      rows = read();
    } catch (e) {
      return fail(e);
    }
    if (!(rows instanceof Promise)) {
      done();
      return file(rows);
    }
    this.#busy = true;
    return rows.then((r) => {
      done();
      return file(r);
    }, fail);
  }

  override queryTuples(
    tenantId: string,
    snap: Snap,
    queries: TupleQuery[],
    at?: number,
  ): MaybePromise<readonly Tuple[]> {
    if (this.#busy) return this.inner.queryTuples(tenantId, snap, queries, at);
    const split = this.#splitTuples(queries);
    if (split.missing.length === 0) return split.hits;
    return this.#settle(
      () => this.inner.queryTuples(tenantId, snap, split.missing, at),
      (rows) => this.#fileTuples(split, rows),
    );
  }

  override queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at?: number,
  ): MaybePromise<readonly Attribute[]> {
    if (this.#busy) return this.inner.queryAttributes(tenantId, snap, queries, at);
    const split = this.#splitAttributes(queries);
    if (split.missing.length === 0) return split.hits;
    return this.#settle(
      () => this.inner.queryAttributes(tenantId, snap, split.missing, at),
      (rows) => this.#fileAttributes(split, rows),
    );
  }

  /** What is not cached, in one call to the inner store (combined where it has the combined read). */
  override queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at?: number,
  ): MaybePromise<[readonly Tuple[], readonly Attribute[]]> {
    if (this.#busy) return super.queryTuplesAndAttributes(tenantId, snap, tuples, attributes, at);
    const t = this.#splitTuples(tuples);
    const a = this.#splitAttributes(attributes);
    if (t.missing.length === 0 && a.missing.length === 0) return [t.hits, a.hits];
    const read = (): MaybePromise<[readonly Tuple[], readonly Attribute[]]> => {
      if (a.missing.length === 0) return both(this.inner.queryTuples(tenantId, snap, t.missing, at), []);
      if (t.missing.length === 0) return both([], this.inner.queryAttributes(tenantId, snap, a.missing, at));
      return super.queryTuplesAndAttributes(tenantId, snap, t.missing, a.missing, at);
    };
    return this.#settle(read, ([rt, ra]): [readonly Tuple[], readonly Attribute[]] => [
      this.#fileTuples(t, rt),
      this.#fileAttributes(a, ra),
    ]);
  }
}
