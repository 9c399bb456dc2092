/**
 * ForwardingStore: a Store that hands every call to `inner`, or, for a call about one tenant, to `storeFor(tenant)`
 * (`inner` unless a subclass routes tenants elsewhere). The base of stores that answer some calls themselves and
 * leave the rest to the database (the in-memory replica, proxies/replica/), and of the store over several databases
 * (proxies/shards/): they override what they answer.
 */
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../model.ts";
import {
  type CombinedReads,
  hasQueryBudget,
  hasWriteNotices,
  type QueryBudget,
  queryBoth,
  type SnapBookmarks,
  type WriteListener,
} from "../capabilities.ts";
import type {
  AttributeQuery,
  ChangeSet,
  DataBundle,
  HeadSchemaRecord,
  MaybePromise,
  Page,
  SchemaRecord,
  Snap,
  Store,
  SubjectTupleQuery,
  Tenant,
  TupleQuery,
  WriteRequest,
} from "../store.ts";

export class ForwardingStore implements Store, CombinedReads, SnapBookmarks, QueryBudget {
  readonly kind: Store["kind"];
  readonly inner: Store;

  /** The inner store's write notices, where it has them (WriteNotices). */
  readonly onWrite?: (listener: WriteListener) => Promise<void>;

  constructor(inner: Store) {
    this.inner = inner;
    this.kind = inner.kind;
    if (hasWriteNotices(inner))
      this.onWrite = (listener) =>
        inner.onWrite((tenantId, snap) => {
          this.heard(tenantId, snap);
          listener(tenantId, snap);
        });
  }

  /** A write notice of the inner store, before the listeners hear it (a subclass that tracks snaps overrides it). */
  protected heard(_tenantId: string, _snap: Snap): void {}

  /** The store a call about `tenantId` goes to. */
  protected storeFor(_tenantId: string): Store {
    return this.inner;
  }

  createTenant(id: string, name: string): Promise<Tenant> {
    return this.storeFor(id).createTenant(id, name);
  }

  getTenant(id: string): Promise<Tenant | undefined> {
    return this.storeFor(id).getTenant(id);
  }

  deleteTenant(id: string): Promise<Tenant | undefined> {
    return this.storeFor(id).deleteTenant(id);
  }

  listTenants(pageSize: number, cursor?: string): Promise<Page<Tenant>> {
    return this.inner.listTenants(pageSize, cursor);
  }

  writeSchema(tenantId: string, version: string, schema: string): Promise<void> {
    return this.storeFor(tenantId).writeSchema(tenantId, version, schema);
  }

  readSchema(tenantId: string, version: string): Promise<SchemaRecord | undefined> {
    return this.storeFor(tenantId).readSchema(tenantId, version);
  }

  headSchema(tenantId: string): Promise<HeadSchemaRecord | undefined> {
    return this.storeFor(tenantId).headSchema(tenantId);
  }

  listSchemas(tenantId: string, pageSize: number, cursor?: string): Promise<Page<SchemaRecord>> {
    return this.storeFor(tenantId).listSchemas(tenantId, pageSize, cursor);
  }

  write(tenantId: string, req: WriteRequest): Promise<Snap> {
    return this.storeFor(tenantId).write(tenantId, req);
  }

  headSnap(tenantId: string): MaybePromise<Snap> {
    return this.storeFor(tenantId).headSnap(tenantId);
  }

  nextExpiry(tenantId: string): MaybePromise<number | undefined> {
    return this.storeFor(tenantId).nextExpiry(tenantId);
  }

  assertSnapReadable(tenantId: string, snap: Snap): MaybePromise<void> {
    return this.storeFor(tenantId).assertSnapReadable(tenantId, snap);
  }

  queryTuples(
    tenantId: string,
    snap: Snap,
    queries: TupleQuery[],
    at?: number,
  ): MaybePromise<readonly Tuple[]> {
    return this.storeFor(tenantId).queryTuples(tenantId, snap, queries, at);
  }

  querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at?: number,
  ): MaybePromise<readonly Tuple[]> {
    return this.storeFor(tenantId).querySubjectTuples(tenantId, snap, queries, at);
  }

  queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at?: number,
  ): MaybePromise<readonly Attribute[]> {
    return this.storeFor(tenantId).queryAttributes(tenantId, snap, queries, at);
  }

  /** One call when the inner store has the combined read, both reads at once otherwise. */
  queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at?: number,
  ): MaybePromise<[readonly Tuple[], readonly Attribute[]]> {
    return queryBoth(this.storeFor(tenantId), tenantId, snap, tuples, attributes, at);
  }

  listObjectIds(tenantId: string, snap: Snap, type: string, at?: number): MaybePromise<string[]> {
    return this.storeFor(tenantId).listObjectIds(tenantId, snap, type, at);
  }

  readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
    at?: number,
  ): Promise<Page<Tuple>> {
    return this.storeFor(tenantId).readTuples(tenantId, snap, filter, pageSize, cursor, at);
  }

  readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
    at?: number,
  ): Promise<Page<Attribute>> {
    return this.storeFor(tenantId).readAttributes(tenantId, snap, filter, pageSize, cursor, at);
  }

  changes(tenantId: string, after: Snap, limit: number): Promise<ChangeSet[]> {
    return this.storeFor(tenantId).changes(tenantId, after, limit);
  }

  writeBundles(tenantId: string, bundles: DataBundle[]): Promise<void> {
    return this.storeFor(tenantId).writeBundles(tenantId, bundles);
  }

  readBundle(tenantId: string, name: string): Promise<DataBundle | undefined> {
    return this.storeFor(tenantId).readBundle(tenantId, name);
  }

  deleteBundle(tenantId: string, name: string): Promise<boolean> {
    return this.storeFor(tenantId).deleteBundle(tenantId, name);
  }

  gc(olderThan: Date): Promise<number> {
    return this.inner.gc(olderThan);
  }

  // a replicated inner store's (D1) replication position travels in snap tokens unchanged
  consistencyBookmark(tenantId: string): string | undefined {
    return this.storeFor(tenantId).consistencyBookmark?.(tenantId);
  }

  readAfterBookmark(tenantId: string, bookmark: string): void {
    this.storeFor(tenantId).readAfterBookmark?.(tenantId, bookmark);
  }

  queriesLeft(): number {
    return hasQueryBudget(this.inner) ? this.inner.queriesLeft() : Number.POSITIVE_INFINITY;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
