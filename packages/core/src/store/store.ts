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
 *
 * Expiry (Pemba extension): a row may carry `expiresAt` (ms since the epoch). Every read takes an evaluation time
 * `at` (ms; default: the store's clock when called) and sees a row only while `at < expiresAt`: a read is a
 * function of (snap, at). The caller (the service) picks `at` ONCE per request. `at = 0` sees every row (the
 * replica's fills). Every read returns a row's `expiresAt` when it has one (the replica files rows read at `at = 0`
 * and filters them by each request's evaluation time itself).
 */
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../model.ts";
import type {
  BulkExports,
  BulkImports,
  CombinedReads,
  EmptyTenants,
  EngineReads,
  HeadSchemaSource,
  LineExports,
  ObjectIdListing,
  QueryBudget,
  RowCounts,
  SnapBookmarks,
  SnapDatabases,
  WriteFeed,
  WriteNotices,
} from "./capabilities.ts";
import type {
  ChangeSet,
  DataBundle,
  HeadSchemaRecord,
  MaybePromise,
  Page,
  SchemaRecord,
  Snap,
  Tenant,
  WriteRequest,
} from "./types.ts";

export type * from "./types.ts";

/** The optional members are the capabilities some stores have (capabilities.ts names them, with guards). */
export interface Store
  extends EngineReads,
    ObjectIdListing,
    Partial<CombinedReads>,
    Partial<HeadSchemaSource>,
    Partial<SnapBookmarks>,
    Partial<QueryBudget>,
    Partial<WriteNotices>,
    Partial<WriteFeed>,
    Partial<SnapDatabases>,
    Partial<EmptyTenants>,
    Partial<RowCounts>,
    Partial<BulkImports>,
    Partial<BulkExports>,
    Partial<LineExports> {
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
  /**
   * The earliest expiresAt of the tenant's live rows (a lower bound: the memory store may answer an earlier time
   * until its next sweep); undefined when none expires. The sweep (write `expireUpTo`) runs only when it is due.
   */
  nextExpiry(tenantId: string): MaybePromise<number | undefined>;
  /** Throws PembaError ERROR_CODE_SNAP_TOKEN_EXPIRED when `snap` is older than the GC window keeps. */
  assertSnapReadable(tenantId: string, snap: Snap): MaybePromise<void>;

  // engine reads at a snapshot (batched): queryTuples, querySubjectTuples, queryAttributes (EngineReads);
  // listObjectIds (ObjectIdListing)

  // filtered, paged reads (the API's read endpoints); stable order
  readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
    at?: number,
  ): Promise<Page<Tuple>>;
  readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
    at?: number,
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
}
