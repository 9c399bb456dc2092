/**
 * Scans over the memory store's columnar tables: result objects built on demand, filters compiled to interned
 * numbers, paging by row id.
 */
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../model.ts";
import { decodeNumberCursor, encodeCursor } from "../cursor.ts";
import type { Page } from "../store.ts";
import type { AttributeTable } from "./attributes.ts";
import { type Interner, NEVER, NONE, upperBound } from "./columns.ts";
import type { TupleTable } from "./tuples.ts";

/** The row as a record, with its `expiresAt` when it has one (paged reads, change feed). */
export function makeTuple(t: TupleTable, s: string[], r: number): Tuple {
  const tuple: Tuple = {
    entity: { type: s[t.et[r]], id: s[t.eid[r]] },
    relation: s[t.rel[r]],
    subject: { type: s[t.st[r]], id: s[t.sid[r]], relation: s[t.srel[r]] },
  };
  const expires = t.expires[r];
  if (expires !== NEVER) tuple.expiresAt = expires;
  return tuple;
}

export function makeAttribute(a: AttributeTable, s: string[], r: number): Attribute {
  const attribute: Attribute = {
    entity: { type: s[a.et[r]], id: s[a.eid[r]] },
    attribute: s[a.name[r]],
    value: a.values[r],
  };
  const expires = a.expires[r];
  if (expires !== NEVER) attribute.expiresAt = expires;
  return attribute;
}

/** A filter field as an interned number: ANY matches everything. */
const ANY = -2;

/** Interned ids of a filter's id list; undefined = any id; an empty set = no stored id matches. */
type IdSet = Set<number> | undefined;

interface NumberedTupleFilter {
  et: number;
  eids: IdSet;
  rel: number;
  st: number;
  sids: IdSet;
  srel: number;
}

interface NumberedAttributeFilter {
  et: number;
  eids: IdSet;
  names: IdSet;
}

const field = (strings: Interner, s: string | undefined): number => (s ? strings.lookup(s) : ANY);

function idSet(strings: Interner, ids: string[] | undefined): IdSet {
  if (!ids || ids.length === 0) return undefined;
  const out = new Set<number>();
  for (const id of ids) {
    const n = strings.lookup(id);
    if (n !== NONE) out.add(n);
  }
  return out;
}

/** The filter over interned numbers; undefined when no row can match (it names a string never stored). */
export function numberTupleFilter(strings: Interner, f: TupleFilter): NumberedTupleFilter | undefined {
  const n: NumberedTupleFilter = {
    et: field(strings, f.entity?.type),
    eids: idSet(strings, f.entity?.ids),
    rel: field(strings, f.relation),
    st: field(strings, f.subject?.type),
    sids: idSet(strings, f.subject?.ids),
    srel: field(strings, f.subject?.relation),
  };
  if (n.et === NONE || n.rel === NONE || n.st === NONE || n.srel === NONE) return undefined;
  if (n.eids?.size === 0 || n.sids?.size === 0) return undefined;
  return n;
}

export function tupleRowMatches(t: TupleTable, r: number, f: NumberedTupleFilter): boolean {
  return (
    (f.et === ANY || t.et[r] === f.et) &&
    (f.rel === ANY || t.rel[r] === f.rel) &&
    (f.st === ANY || t.st[r] === f.st) &&
    (f.srel === ANY || t.srel[r] === f.srel) &&
    (f.eids === undefined || f.eids.has(t.eid[r])) &&
    (f.sids === undefined || f.sids.has(t.sid[r]))
  );
}

export function numberAttributeFilter(
  strings: Interner,
  f: AttributeFilter,
): NumberedAttributeFilter | undefined {
  const n: NumberedAttributeFilter = {
    et: field(strings, f.entity?.type),
    eids: idSet(strings, f.entity?.ids),
    names: idSet(strings, f.attributes),
  };
  if (n.et === NONE || n.eids?.size === 0 || n.names?.size === 0) return undefined;
  return n;
}

export function attributeRowMatches(a: AttributeTable, r: number, f: NumberedAttributeFilter): boolean {
  return (
    (f.et === ANY || a.et[r] === f.et) &&
    (f.eids === undefined || f.eids.has(a.eid[r])) &&
    (f.names === undefined || f.names.has(a.name[r]))
  );
}

/** Rows visible at `snap` and not expired at `at` that `pick` accepts, in row order, after the cursor's row id. */
export function pageRows<T>(
  table: { n: number; id: Float64Array; created: Int32Array; deleted: Int32Array; expires: Float64Array },
  snap: number,
  at: number,
  cursor: string | undefined,
  limit: number,
  pick: (r: number) => T | undefined,
): Page<T> {
  const items: T[] = [];
  let lastId = 0;
  const { id, created, deleted, expires } = table;
  for (let r = upperBound(id, table.n, cursor ? decodeNumberCursor(cursor) : 0); r < table.n; r++) {
    if (created[r] > snap || deleted[r] <= snap || expires[r] <= at) continue;
    const item = pick(r);
    if (item === undefined) continue;
    if (items.length === limit) return { items, cursor: encodeCursor(lastId) };
    items.push(item);
    lastId = id[r];
  }
  return { items, cursor: "" };
}
