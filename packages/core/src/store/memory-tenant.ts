/**
 * One tenant's data in the memory store: rows with their created/deleted transaction ids (history kept for
 * snapshot reads until gc) and nested-map indexes for both walk directions, so engine reads allocate nothing but
 * their result arrays.
 */
import type { Attribute, Tuple } from "../model.ts";
import type { DataBundle, SchemaRecord, Tenant } from "./store.ts";

/**
 * `deleted` of a live row: the largest small integer, so row fields stay unboxed (a double like Infinity would
 * cost a heap number per row) and visibility checks stay integer compares.
 */
export const LIVE = 0x3fffffff;

export interface TupleRow {
  id: number;
  tuple: Tuple;
  created: number;
  /** LIVE while live. */
  deleted: number;
}

export interface AttributeRow {
  id: number;
  attribute: Attribute;
  created: number;
  deleted: number;
}

export interface TxEntry {
  tx: number;
  createdAt: Date;
  createdTuples: TupleRow[];
  deletedTuples: TupleRow[];
  createdAttributes: AttributeRow[];
  deletedAttributes: AttributeRow[];
}

type Nest<T> = Map<string, T>;

export function child<T>(m: Map<string, T>, key: string, make: () => T): T {
  let v = m.get(key);
  if (v === undefined) {
    v = make();
    m.set(key, v);
  }
  return v;
}

const newMap = <T>(): Map<string, T> => new Map<string, T>();
const newTupleList = (): TupleRow[] => [];
const newAttributeList = (): AttributeRow[] => [];
type RelationIndex = Nest<TupleRow[]>;

export class TenantData {
  tenant: Tenant;
  tupleRows: TupleRow[] = [];
  attributeRows: AttributeRow[] = [];
  /** entityType -> entityId -> relation -> rows */
  byEntity: Nest<Nest<Nest<TupleRow[]>>> = new Map();
  /** subjectType -> subjectId -> subjectRelation -> entityType -> relation -> rows */
  bySubject: Nest<Nest<Nest<Nest<Nest<TupleRow[]>>>>> = new Map();
  /** tupleKey -> live row */
  liveTuples = new Map<string, TupleRow>();
  /** entityType -> entityId -> attribute -> rows (at most one live, the last) */
  attributes: Nest<Nest<Nest<AttributeRow[]>>> = new Map();
  schemas: (SchemaRecord & { seq: number })[] = [];
  bundles = new Map<string, DataBundle>();
  txLog: TxEntry[] = [];

  constructor(tenant: Tenant) {
    this.tenant = tenant;
  }

  addTuple(row: TupleRow, key: string): void {
    const t = row.tuple;
    this.tupleRows.push(row);
    this.liveTuples.set(key, row);
    const byId = child(this.byEntity, t.entity.type, newMap<RelationIndex>);
    child(child(byId, t.entity.id, newMap<TupleRow[]>), t.relation, newTupleList).push(row);
    const bySubjectId = child(this.bySubject, t.subject.type, newMap<Nest<Nest<RelationIndex>>>);
    const bySubjectRel = child(bySubjectId, t.subject.id, newMap<Nest<RelationIndex>>);
    const byEntityType = child(bySubjectRel, t.subject.relation, newMap<RelationIndex>);
    child(child(byEntityType, t.entity.type, newMap<TupleRow[]>), t.relation, newTupleList).push(row);
  }

  attributeHistory(type: string, id: string, name: string, create: boolean): AttributeRow[] | undefined {
    if (create) {
      const byId = child(this.attributes, type, newMap<Nest<AttributeRow[]>>);
      return child(child(byId, id, newMap<AttributeRow[]>), name, newAttributeList);
    }
    return this.attributes.get(type)?.get(id)?.get(name);
  }

  liveAttribute(type: string, id: string, name: string): AttributeRow | undefined {
    const rows = this.attributeHistory(type, id, name, false);
    const last = rows?.[rows.length - 1];
    return last && last.deleted === LIVE ? last : undefined;
  }

  addAttribute(row: AttributeRow): void {
    const a = row.attribute;
    this.attributeRows.push(row);
    this.attributeHistory(a.entity.type, a.entity.id, a.attribute, true)?.push(row);
  }

  /** Drops every row deleted at or before `horizon`; returns how many rows were removed. */
  collect(horizon: number): number {
    const deadTuple = (r: TupleRow) => r.deleted <= horizon;
    const deadAttribute = (r: AttributeRow) => r.deleted <= horizon;
    const before = this.tupleRows.length + this.attributeRows.length;
    if (this.tupleRows.some(deadTuple)) {
      this.tupleRows = this.tupleRows.filter((r) => !deadTuple(r));
      pruneNest(this.byEntity, 3, deadTuple);
      pruneNest(this.bySubject, 5, deadTuple);
    }
    if (this.attributeRows.some(deadAttribute)) {
      this.attributeRows = this.attributeRows.filter((r) => !deadAttribute(r));
      pruneNest(this.attributes, 3, deadAttribute);
    }
    this.txLog = this.txLog.filter((e) => e.tx > horizon);
    return before - this.tupleRows.length - this.attributeRows.length;
  }
}

/** Removes dead rows from a nested index of `depth` map levels, dropping emptied branches. */
function pruneNest<R>(m: Map<string, unknown>, depth: number, dead: (r: R) => boolean): void {
  for (const [k, v] of m) {
    if (depth === 1) {
      const rows = (v as R[]).filter((r) => !dead(r));
      if (rows.length === 0) m.delete(k);
      else m.set(k, rows);
    } else {
      const inner = v as Map<string, unknown>;
      pruneNest(inner, depth - 1, dead);
      if (inner.size === 0) m.delete(k);
    }
  }
}
