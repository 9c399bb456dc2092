/**
 * What some stores can do beyond the Store contract, as named interfaces: Store lists the optional ones as
 * Partial members (store.ts), a class that has one says `implements`, and a caller narrows with the guard next to
 * it, so the type checker sees every capability that is used (no probing for methods it does not know).
 */
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../model.ts";
import {
  type AttributeQuery,
  both,
  type ChangeSet,
  type HeadSchemaListener,
  type MaybePromise,
  type Snap,
  type SubjectTupleQuery,
  type Tenant,
  type TupleQuery,
  type WriteRequest,
} from "./types.ts";

/**
 * The tuples and the attributes one level of the walk needs in ONE call (one SQL statement) instead of two, for
 * stores where every call is a round trip. Same rows as queryTuples + queryAttributes.
 */
export interface CombinedReads {
  queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at?: number,
  ): MaybePromise<[readonly Tuple[], readonly Attribute[]]>;
}

/**
 * Stores that read the head schema version as part of their own work (the lazy replica's looks at the database)
 * report it, with the snap it was read at, so the schema registry need not read it again.
 */
export interface HeadSchemaSource {
  onHeadSchema(listener: HeadSchemaListener): void;
}

/**
 * Replicated stores (D1): the replication position travels inside snap tokens. Per tenant, since a store over
 * several databases (ShardedStore) keeps one position per database.
 */
export interface SnapBookmarks {
  /** The replication bookmark after this request's write to the tenant, carried in the snap token it answers. */
  consistencyBookmark(tenantId: string): string | undefined;
  /** This request's later reads of the tenant see at least the write that returned `bookmark` (a snap token's). */
  readAfterBookmark(tenantId: string, bookmark: string): void;
}

/**
 * Replicated stores (D1): the current request's reads at its nearest replica, whatever snap token's bookmark the
 * request carries. A lazy replica reads a tenant it does not hold there at a fresh token's snap, with the primary's
 * changes since that replica's head laid over the rows (proxies/replica/overlay.ts): one round trip to the primary
 * for the token instead of one per walk level.
 */
export interface NearestReplica {
  /**
   * The current request (`request`: an object standing for it, e.g. a key of a WeakMap) and the database as its
   * nearest replica has it (`store`: possibly older than the request's snap token; each of the request's reads
   * through it sees the database at least as new as its earlier ones).
   */
  nearestReplica(): { request: object; store: ReplicaReads };
}

/** The engine's reads at a snapshot, batched (every Store has them; `at`: the request's evaluation time). */
export interface EngineReads {
  queryTuples(
    tenantId: string,
    snap: Snap,
    queries: TupleQuery[],
    at?: number,
  ): MaybePromise<readonly Tuple[]>;
  querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at?: number,
  ): MaybePromise<readonly Tuple[]>;
  queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at?: number,
  ): MaybePromise<readonly Attribute[]>;
}

/** The ids an object type has at a snapshot: lookups start from them when any id could be an answer. */
export interface ObjectIdListing {
  /** Distinct ids of `type` that appear anywhere (tuple entity or subject, attribute entity), sorted. */
  listObjectIds(tenantId: string, snap: Snap, type: string, at?: number): MaybePromise<string[]>;
}

/** Everything the engine reads through: the batched reads, the combined read where a store has it, id listing. */
export type EngineStore = EngineReads & Partial<CombinedReads> & ObjectIdListing;

/** The engine reads and the look of a database as one of its replicas has it (NearestReplica). */
export interface ReplicaReads extends FreshnessSource, CombinedReads, EngineReads {}

/**
 * Stores over several databases (ShardedStore: the Worker's D1 bindings): a snap is a position in ONE database, so
 * a snap token names the database it was minted on, and a token of another database is refused.
 */
export interface SnapDatabases {
  /**
   * The name the tenant's snap tokens carry: its database's, or undefined for the first database (tokens without a
   * name, as a one-database deployment mints them).
   */
  snapDatabase(tenantId: string): string | undefined;
}

/** What deleteEmptyTenant did: deleted the (empty) tenant, found it holding data, or found no such tenant. */
export type EmptyTenantDelete = { deleted: Tenant } | { notEmpty: true } | undefined;

/**
 * Stores that delete a tenant only while it holds nothing (SqlStore), in ONE transaction: how a tenant with no data
 * moves to another database (ShardedStore) without losing a write that raced the move.
 */
export interface EmptyTenants {
  /** Deletes the tenant when it has no schema, bundle, tuple or attribute (deleted ones not yet collected count). */
  deleteEmptyTenant(id: string): Promise<EmptyTenantDelete>;
}

/**
 * Stores capped per request (D1: 1000 queries per Worker invocation): long-running work (a watch stream) ends
 * cleanly before the cap.
 */
export interface QueryBudget {
  /** Statements the current request may still send. */
  queriesLeft(): number;
}

/** The database's state as one statement reads it (FreshnessSource.freshness). */
export interface Freshness {
  head: Snap;
  horizon: Snap;
  /** The tenant's created_at (ms); undefined when the tenant does not exist. */
  tenantCreatedAt: number | undefined;
  /** The tenant's head schema version at `head`, when the store reads it in the same statement. */
  headSchemaVersion?: string;
}

/**
 * A store the replica can look at cheaply (SqlStore): the GC horizon (so expired snaps are known without asking per
 * read), and the head snap, horizon, tenant and head schema in ONE statement (a lazy replica's look per check).
 */
export interface FreshnessSource {
  gcHorizon(): MaybePromise<Snap>;
  freshness(tenantId: string): MaybePromise<Freshness>;
  /** The look and the tenant's change sets after `after`, in one round trip where the driver can (SqlStore). */
  freshnessAndChanges?(
    tenantId: string,
    after: Snap,
  ): Promise<{ freshness: Freshness; changes: ChangeSet[] }>;
}

/**
 * Every tenant's head snap in one call (SqlStore): the replica's timer round catches each tenant up to its own head
 * (on PostgreSQL heads are per tenant: a store-wide head would not be exact for a tenant with a write in flight).
 */
export interface TenantHeads {
  tenantHeads(): Promise<Map<string, Snap>>;
}

/** (tenant id, snap) of a committed write, possibly of another process. */
export type WriteListener = (tenantId: string, snap: Snap) => void;

/**
 * Stores that hear of every committed write, this process's or another's (PostgreSQL: LISTEN/NOTIFY), so a copy
 * catches up at once instead of at its next poll. Notices may be lost (a dropped connection): polling stays.
 */
export interface WriteNotices {
  /** Resolves once notices are heard. */
  onWrite(listener: WriteListener): Promise<void>;
}

/** What a write read of its tenant's change feed in its own transaction (WriteFeed). */
export interface FeedRead {
  /** The write's snap. */
  snap: Snap;
  /** The feed after `after`, at most `limit` change sets, the write's own last: every change up to `snap`. */
  sets: ChangeSet[];
  /** The GC horizon, read with the feed (one snapshot). */
  horizon: Snap;
}

/**
 * A write that also reads its tenant's change feed after `after` (and the GC horizon) in its own transaction, so
 * a copy catches up to the write without statements of its own (PostgreSQL: one read, sent in the write's one
 * Sync). Every change set after `after` is returned. Exact because the write holds its tenant's row lock: every earlier write of the
 * tenant has committed and no later one can, so the feed it sees ends at its own snap.
 */
export interface WriteFeed {
  writeReadingFeed(tenantId: string, req: WriteRequest, after: Snap): Promise<FeedRead>;
}

/**
 * Stores that count the rows a filtered read would return without returning them (SqlStore: one COUNT statement),
 * for the schema diff's orphan counts; others page through readTuples / readAttributes. Same visibility as those.
 */
export interface RowCounts {
  countTuples(tenantId: string, snap: Snap, filter: TupleFilter, at?: number): Promise<number>;
  countAttributes(tenantId: string, snap: Snap, filter: AttributeFilter, at?: number): Promise<number>;
}

/** A copy that takes change sets (MemoryStore): what the replica loads and catches up through. */
export interface ChangeSetSink {
  /** Applies one transaction's changes at its snap (snaps only grow per tenant). */
  applyChangeSet(tenantId: string, set: ChangeSet): void;
  /** Drops history no read at a snap >= `horizon` can see (mirrors the source's GC); returns rows removed. */
  collectUpTo(horizon: Snap): number;
  deleteTenant(id: string): Promise<unknown>;
}

export const hasCombinedReads = <S extends Partial<CombinedReads>>(s: S): s is S & CombinedReads =>
  s.queryTuplesAndAttributes !== undefined;

/** Tuples and attributes at one snap: one call where `s` has the combined read, both reads at once otherwise. */
export function queryBoth(
  s: EngineReads & Partial<CombinedReads>,
  ...[tenantId, snap, tuples, attributes, at]: Parameters<CombinedReads["queryTuplesAndAttributes"]>
): MaybePromise<[readonly Tuple[], readonly Attribute[]]> {
  if (hasCombinedReads(s)) return s.queryTuplesAndAttributes(tenantId, snap, tuples, attributes, at);
  return both(s.queryTuples(tenantId, snap, tuples, at), s.queryAttributes(tenantId, snap, attributes, at));
}

export const hasQueryBudget = <S extends Partial<QueryBudget>>(s: S): s is S & QueryBudget =>
  s.queriesLeft !== undefined;

export const hasFreshness = <S extends Partial<FreshnessSource>>(s: S): s is S & FreshnessSource =>
  s.gcHorizon !== undefined && s.freshness !== undefined;

export const hasTenantHeads = <S extends Partial<TenantHeads>>(s: S): s is S & TenantHeads =>
  s.tenantHeads !== undefined;

export const hasWriteFeed = <S extends Partial<WriteFeed>>(s: S): s is S & WriteFeed =>
  s.writeReadingFeed !== undefined;

export const hasWriteNotices = <S extends Partial<WriteNotices>>(s: S): s is S & WriteNotices =>
  s.onWrite !== undefined;

export const hasEmptyTenants = <S extends Partial<EmptyTenants>>(s: S): s is S & EmptyTenants =>
  s.deleteEmptyTenant !== undefined;

export const hasNearestReplica = <S extends Partial<NearestReplica>>(s: S): s is S & NearestReplica =>
  s.nearestReplica !== undefined;

export const hasRowCounts = <S extends Partial<RowCounts>>(s: S): s is S & RowCounts =>
  s.countTuples !== undefined && s.countAttributes !== undefined;

/** A row of an import and the dump line it came from (named in a conflict). */
export interface ImportRow<T> {
  row: T;
  line: number;
}

/** What one chunk of an import did: its snap (undefined when nothing was written) and the rows by outcome. */
export interface ImportChunkResult {
  snap: Snap | undefined;
  written: number;
  unchanged: number;
  /** Rows that exist with another value or expiry under onConflict "fail" (not written). */
  conflicts: { line: number; key: string }[];
}

/**
 * A store's own fastest path for an import chunk (dump/import.ts), with the chunk's comparison to the tenant's
 * rows done inside ONE transaction: new rows are inserted, identical rows left alone, and a row that exists with
 * another value or expiry is replaced ("touch"), kept ("skip") or reported as a conflict ("fail"). More conflicts
 * than `maxConflicts` fail the call and write nothing. `dryRun` does the same comparison and writes nothing.
 */
export interface BulkImports {
  importChunk(
    tenantId: string,
    tuples: ImportRow<Tuple>[],
    attributes: ImportRow<Attribute>[],
    opts: { onConflict: "touch" | "skip" | "fail"; maxConflicts: number; dryRun: boolean },
  ): Promise<ImportChunkResult>;
  /**
   * Called once by a process whose only work is this import (`pemba import`), before its first chunk: the store may
   * tune its connection for a bulk load (SQLite: a larger page cache; no fsync and index builds after the load when
   * the database holds no rows yet).
   */
  bulkLoad?(): void;
  /** After the import's last chunk, when bulkLoad was called: the store finishes what bulkLoad deferred. */
  bulkLoadDone?(): void;
}

export const hasBulkImports = <S extends Partial<BulkImports>>(s: S): s is S & BulkImports =>
  s.importChunk !== undefined;

/**
 * Cells of one exported row, in the dump's column order, as the driver returns them (numbers may come as strings):
 * tuples [id, entity_type, entity_id, relation, subject_type, subject_id, subject_relation, expires_at];
 * attributes [id, entity_type, entity_id, attribute, value_type, value (JSON text), expires_at]; expires_at NULL
 * for a row that never expires.
 */
export type ExportCells = unknown[];

/**
 * A store's own fastest read of a whole tenant for a dump (dump/export.ts): every row of `table` visible at `snap`,
 * expired ones included, in id order, page by page (each page one statement, so no transaction stays open), as
 * cells rather than model objects.
 */
export interface BulkExports {
  exportPages(
    tenantId: string,
    snap: Snap,
    table: "tuples" | "attributes",
    pageSize: number,
  ): AsyncGenerator<ExportCells[]>;
}

export const hasBulkExports = <S extends Partial<BulkExports>>(s: S): s is S & BulkExports =>
  s.exportPages !== undefined;

/**
 * A store that writes a dump's row lines itself (PostgreSQL: the server formats them in one COPY per table), so the
 * export only passes bytes on. Every row of `table` visible at `snap`, expired ones included, in id order, as the
 * exact bytes of writer.ts's lines (UTF-8, each ending in a newline), in chunks that need not end at a line's end;
 * undefined when some row of the tenant cannot be written so exactly (then the caller reads pages: BulkExports).
 */
export interface LineExports {
  exportLines(
    tenantId: string,
    snap: Snap,
    table: "tuples" | "attributes",
  ): Promise<AsyncIterable<Uint8Array> | undefined>;
}

export const hasLineExports = <S extends Partial<LineExports>>(s: S): s is S & LineExports =>
  s.exportLines !== undefined;
