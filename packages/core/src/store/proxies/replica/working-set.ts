/**
 * The working set: what the engine has read of a tenant, kept per key, within a byte budget.
 *
 * - Keys are what one engine read asks for: the tuples of (entity type, entity id, relation) (checks), the tuples of
 *   (entity type, relation, subject type, subject id, subject relation) (lookups), and the attribute rows of
 *   (entity type, entity id, attribute).
 * - A key's entry holds its rows with the snap each was created and deleted at, as the store would see them from
 *   the entry's `from` snap on: it answers reads at snaps >= `from` (up to the tenant's caught-up snap, which
 *   freshness.ts keeps). Rows are kept whether or not they have expired (`expiresAt` travels with them); a read
 *   filters by its own evaluation time.
 * - The change feed updates every entry a change touches (`applySet`), so a key, once filled, needs no read again
 *   while it stays in the budget.
 * - A read of a held entry answers the entry's `view`: the records its rows show, built by the first read that can
 *   keep it and handed to every later read (a shared frozen array, not a copy per read). It is kept only when it
 *   holds at every snap from `viewFrom` on (every row's create and delete snap is at or before the read's) and at
 *   every evaluation time (no row it shows expires); any change to the rows drops it.
 * - The budget (WorkingSetBudget) counts estimated bytes of every entry of every tenant of the replicas that share
 *   it (the Worker's D1 bindings share one) and evicts the least recently used entries past `maxBytes`: second
 *   chance, which approximates LRU with a flag set per hit (no reordering on the hot path).
 */
import type { Attribute, Tuple } from "../../../model.ts";
import type { AttributeQuery, ChangeSet, Snap, SubjectTupleQuery, TupleQuery } from "../../store.ts";

/** A row of an entry: the record, and the snaps it was created (0: before the entry's `from`) and deleted at. */
export interface Row<T> {
  readonly v: T;
  readonly c: Snap;
  d: Snap;
}

/** `d` of a live row. */
const LIVE = Number.POSITIVE_INFINITY;

/** What the three kinds of keys hold. */
type Kind = "tuples" | "subjects" | "attributes";

export class Entry<T extends Tuple | Attribute = Tuple | Attribute> {
  /** Set by each read of the entry; eviction clears it once before evicting (second chance). */
  used = false;
  bytes: number;
  readonly keys: TenantKeys;
  readonly kind: Kind;
  readonly group: string;
  readonly id: string;
  /** The entry answers reads at snaps >= from. */
  readonly from: Snap;
  /** Replaced by a copy of exactly its length once filled (see `sized`). */
  rows: Row<T>[];
  /**
   * The records the rows show to every read at a snap >= `viewFrom` whatever its evaluation time (see `viewOf`);
   * undefined until a read keeps one, and dropped (`dropView`) whenever `rows` changes.
   */
  view: readonly T[] | undefined = undefined;
  viewFrom: Snap = 0;
  constructor(keys: TenantKeys, kind: Kind, group: string, id: string, from: Snap, rows: Row<T>[]) {
    this.keys = keys;
    this.kind = kind;
    this.group = keys.name(group);
    this.id = id;
    this.from = from;
    this.rows = rows;
    let bytes = ENTRY_BYTES + 2 * (group.length + id.length);
    for (const r of rows) bytes += recordBytes(r.v);
    this.bytes = bytes;
  }
}

/** Bytes of an entry besides its rows: the Entry object, its rows array, the map slot and the key's text. */
const ENTRY_BYTES = 160;
/** Bytes of a row besides its strings' text: the Row, the record's objects and the string headers. */
const ROW_BYTES = 200;
/** Bytes of an entry's view of n > 0 records: the array and its elements' store (an empty view is shared). */
const viewBytes = (n: number): number => (n === 0 ? 0 : 48 + 8 * n);
const NO_RECORDS: readonly never[] = Object.freeze([]);

/**
 * A record's estimated bytes in the working set. With the entry's bytes, calibrated against the heap really held
 * in loadtest/working-set-memory.ts (rows made as a SQL driver makes them): Permify's dataset, one row per key, holds
 * 0.99 bytes of heap per estimated byte.
 */
export function recordBytes(v: Tuple | Attribute): number {
  if ("relation" in v) {
    const t = v;
    return (
      ROW_BYTES +
      2 *
        (t.entity.type.length +
          t.entity.id.length +
          t.relation.length +
          t.subject.type.length +
          t.subject.id.length +
          t.subject.relation.length)
    );
  }
  const a = v;
  const data = a.value.data;
  const size = typeof data === "string" ? 2 * data.length : Array.isArray(data) ? 16 * data.length : 8;
  return ROW_BYTES + 2 * (a.entity.type.length + a.entity.id.length + a.attribute.length) + size;
}

const SEP = "\u0000";
/** Names a tenant's entries keep one copy of (a schema's types, relations and attributes, and their groups). */
const MAX_NAMES = 4096;
export const tupleGroup = (type: string, relation: string): string => type + SEP + relation;
export const subjectGroup = (
  type: string,
  relation: string,
  subjectType: string,
  subjectRelation: string,
): string => type + SEP + relation + SEP + subjectType + SEP + subjectRelation;
export const attributeGroup = (type: string, attribute: string): string => type + SEP + attribute;

/** Whether a row is seen by a read at `snap` and evaluation time `at`. */
const visible = (r: Row<Tuple | Attribute>, snap: Snap, at: number): boolean =>
  r.c <= snap && r.d > snap && (r.v.expiresAt === undefined || r.v.expiresAt > at);

/**
 * The records entry `e` shows to a read at (snap, at), snap >= e.from: its view when that holds at `snap`, else the
 * visible rows' records, kept as its view (its bytes counted) when they are the same at every snap from the newest
 * create or delete on and none expires.
 */
function viewOf<T extends Tuple | Attribute>(e: Entry<T>, snap: Snap, at: number): readonly T[] {
  const view = e.view;
  if (view !== undefined && snap >= e.viewFrom) return view;
  const rows = e.rows;
  let out: T[] | undefined;
  let from = e.from;
  let keep = true;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    if (r.c > snap || (r.d !== LIVE && r.d > snap)) keep = false; // a later change: other snaps see other rows
    if (r.c > from) from = r.c;
    if (r.d !== LIVE && r.d > from) from = r.d;
    if (r.c > snap || r.d <= snap) continue;
    const expiresAt = r.v.expiresAt;
    if (expiresAt !== undefined) {
      keep = false; // what it shows depends on the evaluation time
      if (expiresAt <= at) continue;
    }
    if (out === undefined) out = [r.v];
    else out.push(r.v);
  }
  if (!keep) return out ?? NO_RECORDS;
  if (out === undefined) {
    e.view = NO_RECORDS;
  } else {
    e.view = Object.freeze(out);
    const bytes = viewBytes(out.length);
    e.bytes += bytes;
    const budget = e.keys.budget;
    budget.grow(bytes);
    budget.evict(); // `e` is marked used: evicted last, and this read answers from it either way
  }
  e.viewFrom = from;
  return e.view;
}

/** Drops an entry's view (its rows are about to change); answers the (negative) change in its bytes. */
function dropView(e: Entry): number {
  const view = e.view;
  if (view === undefined) return 0;
  e.view = undefined;
  return -viewBytes(view.length);
}

/**
 * The byte budget and use order of the entries of every replica that shares it. `maxBytes` may be changed at any
 * time; the next fill or change evicts down to it.
 */
export class WorkingSetBudget {
  bytes = 0;
  entries = 0;
  evictions = 0;
  /** Every entry, oldest insertion first (the eviction hand's order). */
  private readonly order = new Set<Entry>();
  maxBytes: number;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  add(e: Entry): void {
    this.order.add(e);
    this.bytes += e.bytes;
    this.entries++;
  }

  /** An entry's bytes changed by `delta` (a change applied to it). */
  grow(delta: number): void {
    this.bytes += delta;
  }

  remove(e: Entry): void {
    if (!this.order.delete(e)) return;
    this.bytes -= e.bytes;
    this.entries--;
  }

  /**
   * Evicts entries until the budget holds: the hand passes entries in insertion order; a used one is moved to the
   * end with its flag cleared, an unused one is evicted. Two passes evict anything that must go.
   */
  evict(): void {
    if (this.bytes <= this.maxBytes) return;
    for (const e of this.order) {
      if (this.bytes <= this.maxBytes) return;
      this.order.delete(e);
      if (e.used) {
        e.used = false;
        this.order.add(e);
        continue;
      }
      this.bytes -= e.bytes;
      this.entries--;
      this.evictions++;
      e.keys.forget(e);
    }
  }
}

/** A read split into the entries that answer it and the keys the store must be asked for. */
export interface Split<Q> {
  /** The entries that answer, in the order of the read's keys (missing keys' entries are filled in later). */
  found: (Entry | undefined)[];
  /** Queries for the missing keys (one per group), or undefined when every key is found. */
  missing?: Q[];
}

/**
 * One tenant's entries. Keys live in maps by group (type and relation or attribute; for subjects also the subject
 * type and relation) and then id, so a read builds one string per group, not per key.
 */
export class TenantKeys {
  readonly tuples = new Map<string, Map<string, Entry<Tuple>>>();
  readonly subjects = new Map<string, Map<string, Entry<Tuple>>>();
  readonly attributes = new Map<string, Map<string, Entry<Attribute>>>();
  /** Entries of this tenant (all kinds). */
  size = 0;
  hits = 0;
  misses = 0;
  readonly budget: WorkingSetBudget;
  /**
   * One copy of each name the entries hold (types, relations, attributes, groups): a driver gives every row its own
   * strings, and a working set of millions of rows would hold as many copies of a few dozen names.
   */
  private readonly names = new Map<string, string>();

  constructor(budget: WorkingSetBudget) {
    this.budget = budget;
  }

  /** The kept copy of a name (at most MAX_NAMES are kept; past that a name is its own copy). */
  name(text: string): string {
    const kept = this.names.get(text);
    if (kept !== undefined) return kept;
    if (this.names.size < MAX_NAMES) this.names.set(text, text);
    return text;
  }

  /** A store's tuple as an entry keeps it: kept names, and the key's own id string for the side it is keyed by. */
  private keptTuple(t: Tuple, entityId: string, subjectId: string): Tuple {
    const kept: Tuple = {
      entity: { type: this.name(t.entity.type), id: entityId },
      relation: this.name(t.relation),
      subject: { type: this.name(t.subject.type), id: subjectId, relation: this.name(t.subject.relation) },
    };
    if (t.expiresAt !== undefined) kept.expiresAt = t.expiresAt;
    return kept;
  }

  private keptAttribute(a: Attribute, entityId: string): Attribute {
    const kept: Attribute = {
      entity: { type: this.name(a.entity.type), id: entityId },
      attribute: this.name(a.attribute),
      value: { type: this.name(a.value.type) as Attribute["value"]["type"], data: a.value.data },
    };
    if (a.expiresAt !== undefined) kept.expiresAt = a.expiresAt;
    return kept;
  }

  private table(kind: Kind): Map<string, Map<string, Entry>> {
    return kind === "tuples" ? this.tuples : kind === "subjects" ? this.subjects : this.attributes;
  }

  /** Removes an entry the budget evicted (the budget has already uncounted it). */
  forget(e: Entry): void {
    const ids = this.table(e.kind).get(e.group);
    if (ids?.get(e.id) !== e) return;
    ids.delete(e.id);
    if (ids.size === 0) this.table(e.kind).delete(e.group);
    this.size--;
  }

  /** Drops every entry (the tenant was deleted, re-created, or fell behind the GC horizon). */
  clear(): void {
    for (const kind of ["tuples", "subjects", "attributes"] as const) {
      for (const ids of this.table(kind).values()) for (const e of ids.values()) this.budget.remove(e);
      this.table(kind).clear();
    }
    this.size = 0;
  }

  /** Files an entry unless one is there already (filled by another read meanwhile); answers the one kept. */
  file<T extends Tuple | Attribute>(e: Entry<T>): Entry<T> {
    const table = this.table(e.kind) as Map<string, Map<string, Entry<T>>>;
    let ids = table.get(e.group);
    if (ids === undefined) {
      ids = new Map();
      table.set(e.group, ids);
    }
    const there = ids.get(e.id);
    if (there !== undefined) return there;
    ids.set(e.id, e);
    this.size++;
    this.budget.add(e);
    return e;
  }

  /** Interned group strings by their first two parts: a read looks its group up without building it. */
  readonly #pairGroups = new Map<string, Map<string, string>>();

  #pairGroup(type: string, name: string): string {
    let byName = this.#pairGroups.get(type);
    if (byName === undefined) {
      byName = new Map();
      this.#pairGroups.set(type, byName);
    }
    let group = byName.get(name);
    if (group === undefined) {
      group = type + SEP + name;
      byName.set(name, group);
    }
    return group;
  }

  // ---- a read every key of which is held: answered in one pass ----

  /**
   * The rows of a read whose every key is held at `snap`, as `answerTuples` gives them (one hit per key);
   * undefined when a key is missing (nothing counted: `splitTuples` then counts the read's hits and misses).
   * A hot read answers without the split's arrays; a read of one key answers that entry's view (not a copy).
   */
  heldTuples(queries: TupleQuery[], snap: Snap, at: number): readonly Tuple[] | undefined {
    if (queries.length === 1) {
      const q = queries[0];
      if (q.relations.length === 1 && q.entityIds.length === 1) {
        const ids = this.tuples.get(this.#pairGroup(q.entityType, q.relations[0]));
        return this.#heldOne(ids, q.entityIds[0], snap, at);
      }
    }
    const out: Tuple[] = [];
    let keys = 0;
    for (const q of queries) {
      for (const relation of q.relations) {
        const n = this.#appendHeld(
          this.tuples.get(this.#pairGroup(q.entityType, relation)),
          q.entityIds,
          snap,
          at,
          out,
        );
        if (n < 0) return undefined;
        keys += n;
      }
    }
    this.hits += keys;
    return out;
  }

  /** `heldTuples` for subject reads. */
  heldSubjects(queries: SubjectTupleQuery[], snap: Snap, at: number): readonly Tuple[] | undefined {
    if (queries.length === 1) {
      const q = queries[0];
      if (q.relations.length === 1 && q.subjectIds.length === 1) {
        const ids = this.subjects.get(
          subjectGroup(q.entityType, q.relations[0], q.subjectType, q.subjectRelation),
        );
        return this.#heldOne(ids, q.subjectIds[0], snap, at);
      }
    }
    const out: Tuple[] = [];
    let keys = 0;
    for (const q of queries) {
      for (const relation of q.relations) {
        const ids = this.subjects.get(subjectGroup(q.entityType, relation, q.subjectType, q.subjectRelation));
        const n = this.#appendHeld(ids, q.subjectIds, snap, at, out);
        if (n < 0) return undefined;
        keys += n;
      }
    }
    this.hits += keys;
    return out;
  }

  /** `heldTuples` for attribute reads; a read of every entity of a type is never held. */
  heldAttributes(queries: AttributeQuery[], snap: Snap, at: number): readonly Attribute[] | undefined {
    if (queries.length === 1) {
      const q = queries[0];
      const entityIds = q.entityIds;
      if (entityIds !== undefined && q.attributes.length === 1 && entityIds.length === 1) {
        const ids = this.attributes.get(this.#pairGroup(q.entityType, q.attributes[0]));
        return this.#heldOne(ids, entityIds[0], snap, at);
      }
    }
    const out: Attribute[] = [];
    let keys = 0;
    for (const q of queries) {
      const entityIds = q.entityIds;
      if (entityIds === undefined) return undefined;
      for (const name of q.attributes) {
        const n = this.#appendHeld(
          this.attributes.get(this.#pairGroup(q.entityType, name)),
          entityIds,
          snap,
          at,
          out,
        );
        if (n < 0) return undefined;
        keys += n;
      }
    }
    this.hits += keys;
    return out;
  }

  /** The view of the entry of `id` in `ids` at (snap, at), one hit; undefined when not held (nothing counted). */
  #heldOne<T extends Tuple | Attribute>(
    ids: Map<string, Entry<T>> | undefined,
    id: string,
    snap: Snap,
    at: number,
  ): readonly T[] | undefined {
    const e = ids?.get(id);
    if (e === undefined || e.from > snap) return undefined;
    e.used = true;
    this.hits++;
    return viewOf(e, snap, at);
  }

  /**
   * Appends the records the entries of `wanted` in `ids` show at (snap, at) (marking them used); answers how many
   * keys it read, or -1 at the first key not held.
   */
  #appendHeld<T extends Tuple | Attribute>(
    ids: Map<string, Entry<T>> | undefined,
    wanted: string[],
    snap: Snap,
    at: number,
    out: T[],
  ): number {
    for (const id of wanted) {
      const e = ids?.get(id);
      if (e === undefined || e.from > snap) return -1;
      e.used = true;
      const view = viewOf(e, snap, at);
      for (let i = 0; i < view.length; i++) out.push(view[i]);
    }
    return wanted.length;
  }

  // ---- splitting a read into entries found and keys missing ----

  private entryFor(kind: Kind, group: string, id: string, snap: Snap): Entry | undefined {
    const e = this.table(kind).get(group)?.get(id);
    if (e === undefined || e.from > snap) {
      this.misses++;
      return undefined;
    }
    e.used = true;
    this.hits++;
    return e;
  }

  splitTuples(queries: TupleQuery[], snap: Snap): Split<TupleQuery> {
    const found: (Entry | undefined)[] = [];
    let missing: TupleQuery[] | undefined;
    for (const q of queries) {
      for (const relation of q.relations) {
        const group = tupleGroup(q.entityType, relation);
        let query: TupleQuery | undefined;
        for (const id of q.entityIds) {
          const e = this.entryFor("tuples", group, id, snap);
          found.push(e);
          if (e !== undefined) continue;
          if (query === undefined) {
            query = { entityType: q.entityType, entityIds: [], relations: [relation] };
            missing = push(missing, query);
          }
          query.entityIds.push(id);
        }
      }
    }
    return { found, missing };
  }

  splitSubjects(queries: SubjectTupleQuery[], snap: Snap): Split<SubjectTupleQuery> {
    const found: (Entry | undefined)[] = [];
    let missing: SubjectTupleQuery[] | undefined;
    for (const q of queries) {
      for (const relation of q.relations) {
        const group = subjectGroup(q.entityType, relation, q.subjectType, q.subjectRelation);
        let query: SubjectTupleQuery | undefined;
        for (const id of q.subjectIds) {
          const e = this.entryFor("subjects", group, id, snap);
          found.push(e);
          if (e !== undefined) continue;
          if (query === undefined) {
            query = { ...q, relations: [relation], subjectIds: [] };
            missing = push(missing, query);
          }
          query.subjectIds.push(id);
        }
      }
    }
    return { found, missing };
  }

  /** Reads of every entity of a type (no ids) are not kept per key: they go to the store whole. */
  splitAttributes(queries: AttributeQuery[], snap: Snap): Split<AttributeQuery> {
    const found: (Entry | undefined)[] = [];
    let missing: AttributeQuery[] | undefined;
    for (const q of queries) {
      if (q.entityIds === undefined) {
        missing = push(missing, q);
        continue;
      }
      for (const name of q.attributes) {
        const group = attributeGroup(q.entityType, name);
        let query: AttributeQuery | undefined;
        for (const id of q.entityIds) {
          const e = this.entryFor("attributes", group, id, snap);
          found.push(e);
          if (e !== undefined) continue;
          if (query === undefined) {
            query = { entityType: q.entityType, entityIds: [], attributes: [name] };
            missing = push(missing, query);
          }
          query.entityIds!.push(id);
        }
      }
    }
    return { found, missing };
  }

  // ---- answering a read from entries ----

  /**
   * The rows a read sees at (snap, at): from the entries found, and for each missing key from `filled` (the store's
   * answer, as entries by group and id).
   */
  answerTuples(
    queries: TupleQuery[],
    split: Split<TupleQuery>,
    snap: Snap,
    at: number,
    filled?: Map<string, Entry>,
  ): Tuple[] {
    const out: Tuple[] = [];
    let i = 0;
    for (const q of queries) {
      for (const relation of q.relations) {
        let group: string | undefined;
        for (const id of q.entityIds) {
          let e = split.found[i++];
          if (e === undefined) {
            group ??= tupleGroup(q.entityType, relation);
            e = filled?.get(`tuples${SEP}${group}${SEP}${id}`);
            if (e === undefined) continue;
          }
          for (const r of (e as Entry<Tuple>).rows) if (visible(r, snap, at)) out.push(r.v);
        }
      }
    }
    return out;
  }

  answerSubjects(
    queries: SubjectTupleQuery[],
    split: Split<SubjectTupleQuery>,
    snap: Snap,
    at: number,
    filled?: Map<string, Entry>,
  ): Tuple[] {
    const out: Tuple[] = [];
    let i = 0;
    for (const q of queries) {
      for (const relation of q.relations) {
        let group: string | undefined;
        for (const id of q.subjectIds) {
          let e = split.found[i++];
          if (e === undefined) {
            group ??= subjectGroup(q.entityType, relation, q.subjectType, q.subjectRelation);
            e = filled?.get(`subjects${SEP}${group}${SEP}${id}`);
            if (e === undefined) continue;
          }
          for (const r of (e as Entry<Tuple>).rows) if (visible(r, snap, at)) out.push(r.v);
        }
      }
    }
    return out;
  }

  /** `byType`: the store's rows for the reads of every entity of a type (passed through, filtered by `at`). */
  answerAttributes(
    queries: AttributeQuery[],
    split: Split<AttributeQuery>,
    snap: Snap,
    at: number,
    filled?: Map<string, Entry>,
    byType?: Attribute[],
  ): Attribute[] {
    const out: Attribute[] = [];
    let i = 0;
    for (const q of queries) {
      if (q.entityIds === undefined) continue;
      for (const name of q.attributes) {
        let group: string | undefined;
        for (const id of q.entityIds) {
          let e = split.found[i++];
          if (e === undefined) {
            group ??= attributeGroup(q.entityType, name);
            e = filled?.get(`attributes${SEP}${group}${SEP}${id}`);
            if (e === undefined) continue;
          }
          for (const r of (e as Entry<Attribute>).rows) if (visible(r, snap, at)) out.push(r.v);
        }
      }
    }
    if (byType !== undefined) {
      for (const a of byType) if (a.expiresAt === undefined || a.expiresAt > at) out.push(a);
    }
    return out;
  }

  // ---- filling entries from the store's answer ----

  /**
   * The store's answer to the missing keys (read at `snap` with `at` = 0: every row, expired or not) as new entries
   * from `snap`, by group and id (keys with no row get an empty entry: "none" is worth keeping too).
   */
  tupleEntries(missing: TupleQuery[], rows: readonly Tuple[], snap: Snap): Map<string, Entry> {
    const made = new Map<string, Entry>();
    for (const q of missing) {
      const group = tupleGroup(q.entityType, q.relations[0]);
      for (const id of q.entityIds)
        made.set(`tuples${SEP}${group}${SEP}${id}`, new Entry(this, "tuples", group, id, snap, []));
    }
    for (const t of rows) {
      const e = made.get(`tuples${SEP}${tupleGroup(t.entity.type, t.relation)}${SEP}${t.entity.id}`) as
        | Entry<Tuple>
        | undefined;
      e?.rows.push({ v: this.keptTuple(t, e.id, t.subject.id), c: 0, d: LIVE });
    }
    return sized(made);
  }

  subjectEntries(missing: SubjectTupleQuery[], rows: readonly Tuple[], snap: Snap): Map<string, Entry> {
    const made = new Map<string, Entry>();
    for (const q of missing) {
      const group = subjectGroup(q.entityType, q.relations[0], q.subjectType, q.subjectRelation);
      for (const id of q.subjectIds) {
        made.set(`subjects${SEP}${group}${SEP}${id}`, new Entry(this, "subjects", group, id, snap, []));
      }
    }
    for (const t of rows) {
      const g = subjectGroup(t.entity.type, t.relation, t.subject.type, t.subject.relation);
      const e = made.get(`subjects${SEP}${g}${SEP}${t.subject.id}`) as Entry<Tuple> | undefined;
      e?.rows.push({ v: this.keptTuple(t, t.entity.id, e.id), c: 0, d: LIVE });
    }
    return sized(made);
  }

  /** Only reads by id make entries; the rows of reads of a whole type are answered, not kept. */
  attributeEntries(
    missing: AttributeQuery[],
    rows: readonly Attribute[],
    snap: Snap,
  ): [Map<string, Entry>, Attribute[]] {
    const made = new Map<string, Entry>();
    const byType: Attribute[] = [];
    const types = new Set<string>();
    for (const q of missing) {
      if (q.entityIds === undefined) {
        for (const name of q.attributes) types.add(attributeGroup(q.entityType, name));
        continue;
      }
      const group = attributeGroup(q.entityType, q.attributes[0]);
      for (const id of q.entityIds) {
        made.set(`attributes${SEP}${group}${SEP}${id}`, new Entry(this, "attributes", group, id, snap, []));
      }
    }
    // a key has at most one row at a snap; a row read both by id and by type comes back once for each
    const typed = new Set<string>();
    for (const a of rows) {
      const g = attributeGroup(a.entity.type, a.attribute);
      const e = made.get(`attributes${SEP}${g}${SEP}${a.entity.id}`) as Entry<Attribute> | undefined;
      if (e !== undefined && e.rows.length === 0)
        e.rows.push({ v: this.keptAttribute(a, e.id), c: 0, d: LIVE });
      if (types.has(g) && !typed.has(g + SEP + a.entity.id)) {
        typed.add(g + SEP + a.entity.id);
        byType.push(a);
      }
    }
    return [sized(made), byType];
  }

  /**
   * Files entries made from the store's answer, caught up to the tenant's snap (a key filed by another read
   * meanwhile keeps that entry; the read answers from its own).
   */
  fileAll(made: Map<string, Entry>): void {
    for (const e of made.values()) this.file(e);
  }

  // ---- the change feed ----

  /**
   * Applies one change set (snap x) to the entries it touches: the filed entries, or (`made`) only the entries a store
   * read made that are not filed yet. A filed entry already has every set applied since it was filed, so a read's
   * entries are caught up on their own; applying a set to a filed entry twice would leave a dead copy of each row it
   * creates there. Deletes first, then creates, as the store applied them; rows deleted at or before `horizon` are
   * dropped (no read can see them). Answers the bytes the filed entries grew by.
   */
  applySet(set: ChangeSet, horizon: Snap, made?: Map<string, Entry>): number {
    let grown = 0;
    const x = set.snap;
    const targets: Entry[] = [];
    const collect = (kind: Kind, group: string, id: string) => {
      const e =
        made === undefined ? this.table(kind).get(group)?.get(id) : made.get(kind + SEP + group + SEP + id);
      if (e !== undefined) targets.push(e);
    };
    const change = (e: Entry, rows: Row<Tuple | Attribute>[], v: Tuple | Attribute, create: boolean) => {
      let delta = dropView(e) + prune(rows, horizon);
      if (create) {
        rows.push({ v, c: x, d: LIVE });
        delta += recordBytes(v);
      }
      e.bytes += delta;
      if (made === undefined) grown += delta;
    };
    for (const pass of ["OPERATION_DELETE", "OPERATION_CREATE"] as const) {
      const create = pass === "OPERATION_CREATE";
      for (const c of set.changes) {
        if (c.operation !== pass) continue;
        targets.length = 0;
        const t = c.tuple;
        if (t !== undefined) {
          collect("tuples", tupleGroup(t.entity.type, t.relation), t.entity.id);
          collect(
            "subjects",
            subjectGroup(t.entity.type, t.relation, t.subject.type, t.subject.relation),
            t.subject.id,
          );
          const kept = create && targets.length > 0 ? this.keptTuple(t, t.entity.id, t.subject.id) : t;
          for (const e of targets) {
            // a create of a tuple that is live replaces it (another expiry); a delete ends it
            const rows = (e as Entry<Tuple>).rows;
            for (const r of rows) if (r.d === LIVE && sameTuple(r.v, t)) r.d = x;
            change(e, rows, kept, create);
          }
          continue;
        }
        const a = c.attribute;
        if (a === undefined) continue;
        collect("attributes", attributeGroup(a.entity.type, a.attribute), a.entity.id);
        const kept = create && targets.length > 0 ? this.keptAttribute(a, a.entity.id) : a;
        for (const e of targets) {
          const rows = (e as Entry<Attribute>).rows;
          for (const r of rows) if (r.d === LIVE) r.d = x;
          change(e, rows, kept, create);
        }
      }
    }
    return grown;
  }

  /** Drops rows deleted at or before the GC horizon from every entry; answers the bytes freed. */
  collect(horizon: Snap): number {
    let freed = 0;
    for (const kind of ["tuples", "subjects", "attributes"] as const) {
      for (const ids of this.table(kind).values()) {
        for (const e of ids.values()) {
          let delta = prune(e.rows, horizon);
          if (delta !== 0) delta += dropView(e);
          e.bytes += delta;
          freed -= delta;
        }
      }
    }
    return freed;
  }

  /** Rows held by this tenant's entries (all kinds, deleted ones not yet collected included). */
  rowCount(): number {
    let n = 0;
    for (const kind of ["tuples", "subjects", "attributes"] as const) {
      for (const ids of this.table(kind).values()) for (const e of ids.values()) n += e.rows.length;
    }
    return n;
  }
}

const sameTuple = (a: Tuple, b: Tuple): boolean =>
  a.entity.id === b.entity.id &&
  a.subject.id === b.subject.id &&
  a.entity.type === b.entity.type &&
  a.relation === b.relation &&
  a.subject.type === b.subject.type &&
  a.subject.relation === b.subject.relation;

/** Removes rows deleted at or before `horizon`; answers the (negative) change in bytes. */
function prune(rows: Row<Tuple | Attribute>[], horizon: Snap): number {
  let delta = 0;
  let w = 0;
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    if (row.d <= horizon) {
      delta -= recordBytes(row.v);
      continue;
    }
    rows[w++] = row;
  }
  rows.length = w;
  return delta;
}

/**
 * Entries are built empty and filled: their bytes are counted once they hold their rows, and a filled entry's rows
 * are copied to an array of their length (a pushed-to array keeps room for 16 rows: 128 bytes for an entry of one).
 */
function sized(made: Map<string, Entry>): Map<string, Entry> {
  for (const e of made.values()) {
    if (e.rows.length > 0) e.rows = e.rows.slice();
    let bytes = ENTRY_BYTES + 2 * (e.group.length + e.id.length);
    for (const r of e.rows) bytes += recordBytes(r.v);
    e.bytes = bytes;
  }
  return made;
}

/** `item` appended to `list`, made on first use. */
function push<T>(list: T[] | undefined, item: T): T[] {
  if (list === undefined) return [item];
  list.push(item);
  return list;
}
