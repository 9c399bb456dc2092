/**
 * The storage contract every driver implements (memory, SQLite, libSQL, PostgreSQL) and the one contract test
 * suite checks (`contract/`). Drivers know nothing of the schema language.
 *
 * Snapshots: every write request is one transaction and gets a new transaction id from a store-wide monotonic
 * counter; that id is the snap token (the HTTP layer encodes it). Rows carry created/deleted transaction ids, so a
 * read "at snap s" sees exactly the rows with created <= s and (deleted is null or deleted > s).
 *
 * Read methods used by the engine may answer synchronously (memory, better-sqlite3) or with a promise (libSQL,
 * PostgreSQL): the engine awaits only when it must. Each engine read method takes a LIST of queries so that the
 * per-request batcher can turn every read of one level of the walk into ONE call (one SQL statement).
 */
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../model.ts";

export type MaybePromise<T> = T | Promise<T>;

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

export interface Store {
  readonly kind: "memory" | "sqlite" | "libsql" | "postgres" | "d1";

  // tenants ("t1" exists after `open`)
  createTenant(id: string, name: string): Promise<Tenant>;
  getTenant(id: string): Promise<Tenant | undefined>;
  /** Deletes the tenant and all its data; undefined when it did not exist. */
  deleteTenant(id: string): Promise<Tenant | undefined>;
  listTenants(pageSize: number, cursor?: string): Promise<Page<Tenant>>;

  // schema versions
  writeSchema(tenantId: string, version: string, schema: string): Promise<void>;
  readSchema(tenantId: string, version: string): Promise<SchemaRecord | undefined>;
  /**
   * The newest schema version of the tenant, with a snap `readAt` such that every write with a snap <= readAt had
   * committed before the schema was read (read in the same statement, or just before it).
   */
  headSchema(tenantId: string): Promise<HeadSchemaRecord | undefined>;
  /** Newest first. */
  listSchemas(tenantId: string, pageSize: number, cursor?: string): Promise<Page<SchemaRecord>>;

  // data writes: one transaction per call, returns the new snap
  write(tenantId: string, req: WriteRequest): Promise<Snap>;
  /** The newest snap that this tenant's reads can use (the store-wide head). */
  headSnap(tenantId: string): MaybePromise<Snap>;
  /** Throws PembaError ERROR_CODE_SNAP_TOKEN_EXPIRED when `snap` is older than the GC window keeps. */
  assertSnapReadable(tenantId: string, snap: Snap): MaybePromise<void>;

  // engine reads at a snapshot (batched)
  queryTuples(tenantId: string, snap: Snap, queries: TupleQuery[]): MaybePromise<Tuple[]>;
  querySubjectTuples(tenantId: string, snap: Snap, queries: SubjectTupleQuery[]): MaybePromise<Tuple[]>;
  queryAttributes(tenantId: string, snap: Snap, queries: AttributeQuery[]): MaybePromise<Attribute[]>;
  /**
   * Optional: the tuples and the attributes one level of the walk needs, in ONE call (one SQL statement) instead of
   * two, for stores where every call is a round trip. Same rows as queryTuples + queryAttributes.
   */
  queryTuplesAndAttributes?(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
  ): MaybePromise<[Tuple[], Attribute[]]>;
  /** Distinct ids of `type` that appear anywhere (tuple entity or subject, attribute entity), sorted. */
  listObjectIds(tenantId: string, snap: Snap, type: string): MaybePromise<string[]>;

  // filtered, paged reads (the API's read endpoints); stable order
  readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Tuple>>;
  readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Attribute>>;

  /** Change feed: the change sets with snap > `after`, oldest first, at most `limit` sets. */
  changes(tenantId: string, after: Snap, limit: number): Promise<ChangeSet[]>;

  // bundles
  writeBundles(tenantId: string, bundles: DataBundle[]): Promise<void>;
  readBundle(tenantId: string, name: string): Promise<DataBundle | undefined>;
  deleteBundle(tenantId: string, name: string): Promise<boolean>;

  /** Removes rows deleted before `olderThan` (and their history); returns how many rows were removed. */
  gc(olderThan: Date): Promise<number>;
  close(): Promise<void>;

  /**
   * Optional: stores that read the head schema version as part of their own work (the lazy replica's looks at the
   * database) report it, with the snap it was read at, so the schema registry need not read it again.
   */
  onHeadSchema?(listener: HeadSchemaListener): void;

  // replicated stores (D1): the replication position travels inside snap tokens
  /** The replication bookmark after this request's write, carried in the snap token it answers. */
  consistencyBookmark?(): string | undefined;
  /** This request's later reads see at least the write that returned `bookmark` (from a snap token). */
  readAfterBookmark?(bookmark: string): void;
  /**
   * Statements the current request may still send, for a store capped per request (D1: 1000 queries per Worker
   * invocation); absent = no cap. Long-running work (a watch stream) ends cleanly before the cap.
   */
  queriesLeft?(): number;
}
