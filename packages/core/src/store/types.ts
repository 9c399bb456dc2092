/** The records and queries the Store contract (store.ts) and its capabilities (capabilities.ts) speak in. */
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../model.ts";

export type MaybePromise<T> = T | Promise<T>;

/** Two answers as one: a promise when either is one, the pair itself when neither is. */
export function both<A, B>(a: MaybePromise<A>, b: MaybePromise<B>): MaybePromise<[A, B]> {
  if (a instanceof Promise || b instanceof Promise) return Promise.all([a, b]);
  return [a, b];
}

/** A transaction id. 0 = before any write. */
export type Snap = number;

export interface Page<T> {
  items: T[];
  /** Opaque cursor for the next page; "" when there is none. */
  cursor: string;
}

export interface Tenant {
  id: string;
  name: string;
  createdAt: Date;
}

export interface SchemaRecord {
  version: string;
  schema: string;
  createdAt: Date;
}

/** The head schema and the store snap it was read at (a lower bound: every write <= readAt was visible). */
export interface HeadSchemaRecord extends SchemaRecord {
  readAt: Snap;
}

/** Tuples with these entity ids and relations (the check direction: entity -> subjects). */
export interface TupleQuery {
  entityType: string;
  entityIds: string[];
  relations: string[];
}

/** Tuples whose subject is one of these (the lookup direction: subject -> entities). */
export interface SubjectTupleQuery {
  entityType: string;
  relations: string[];
  subjectType: string;
  subjectIds: string[];
  /** "" = direct subjects only. */
  subjectRelation: string;
}

/** Attributes of these entities (or of every entity of the type when `entityIds` is undefined). */
export interface AttributeQuery {
  entityType: string;
  entityIds?: string[];
  attributes: string[];
}

export interface WriteRequest {
  /** Inserted; writing a tuple that already exists is a no-op. */
  tuples?: Tuple[];
  /** Upserted: a new value replaces the old one. */
  attributes?: Attribute[];
  /** Exact tuples to delete. */
  deleteTuples?: Tuple[];
  /** Every tuple matching any of these filters is deleted. */
  deleteTupleFilters?: TupleFilter[];
  /** Exact attributes (entity + name) to delete. */
  deleteAttributes?: { entity: { type: string; id: string }; attribute: string }[];
  /** Every attribute matching any of these filters is deleted. */
  deleteAttributeFilters?: AttributeFilter[];
  /**
   * The expiry sweep: every live tuple and attribute whose expiresAt is at or before this time (ms) is deleted, so
   * the change feed and watch report the expiry as a delete and GC later removes the row.
   */
  expireUpTo?: number;
}

export interface DataChange {
  operation: "OPERATION_CREATE" | "OPERATION_DELETE";
  tuple?: Tuple;
  attribute?: Attribute;
}

export interface ChangeSet {
  snap: Snap;
  changes: DataChange[];
}

export interface BundleOperation {
  relationships_write: string[];
  relationships_delete: string[];
  attributes_write: string[];
  attributes_delete: string[];
}

export interface DataBundle {
  name: string;
  arguments: string[];
  operations: BundleOperation[];
}

export type HeadSchemaListener = (tenantId: string, version: string, readAt: Snap) => void;
