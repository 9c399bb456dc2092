/**
 * ForwardingStore: a Store that hands every call to `inner`. The base of stores that answer some calls themselves
 * and leave the rest to the database (the in-memory replica, proxies/replica/): they override what they answer.
 */
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../model.ts";
import {
  type CombinedReads,
  hasCombinedReads,
  hasQueryBudget,
  hasWriteNotices,
  type QueryBudget,
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
    if (hasWriteNotices(inner)) this.onWrite = (listener) => inner.onWrite(listener);
  }

  createTenant(id: string, name: string): Promise<Tenant> {
    return this.inner.createTenant(id, name);
  }

  getTenant(id: string): Promise<Tenant | undefined> {
    return this.inner.getTenant(id);
  }

  deleteTenant(id: string): Promise<Tenant | undefined> {
    return this.inner.deleteTenant(id);
  }

  listTenants(pageSize: number, cursor?: string): Promise<Page<Tenant>> {
    return this.inner.listTenants(pageSize, cursor);
  }

  writeSchema(tenantId: string, version: string, schema: string): Promise<void> {
    return this.inner.writeSchema(tenantId, version, schema);
  }

  readSchema(tenantId: string, version: string): Promise<SchemaRecord | undefined> {
    return this.inner.readSchema(tenantId, version);
  }

  headSchema(tenantId: string): Promise<HeadSchemaRecord | undefined> {
    return this.inner.headSchema(tenantId);
  }

  listSchemas(tenantId: string, pageSize: number, cursor?: string): Promise<Page<SchemaRecord>> {
    return this.inner.listSchemas(tenantId, pageSize, cursor);
  }

  write(tenantId: string, req: WriteRequest): Promise<Snap> {
    return this.inner.write(tenantId, req);
  }

  headSnap(tenantId: string): MaybePromise<Snap> {
    return this.inner.headSnap(tenantId);
  }

  assertSnapReadable(tenantId: string, snap: Snap): MaybePromise<void> {
    return this.inner.assertSnapReadable(tenantId, snap);
  }

  queryTuples(tenantId: string, snap: Snap, queries: TupleQuery[]): MaybePromise<Tuple[]> {
    return this.inner.queryTuples(tenantId, snap, queries);
  }

  querySubjectTuples(tenantId: string, snap: Snap, queries: SubjectTupleQuery[]): MaybePromise<Tuple[]> {
    return this.inner.querySubjectTuples(tenantId, snap, queries);
  }

  queryAttributes(tenantId: string, snap: Snap, queries: AttributeQuery[]): MaybePromise<Attribute[]> {
    return this.inner.queryAttributes(tenantId, snap, queries);
  }

  /** One call when the inner store has the combined read, both reads at once otherwise. */
  queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
  ): MaybePromise<[Tuple[], Attribute[]]> {
    const inner = this.inner;
    if (hasCombinedReads(inner)) return inner.queryTuplesAndAttributes(tenantId, snap, tuples, attributes);
    const t = inner.queryTuples(tenantId, snap, tuples);
    const a = inner.queryAttributes(tenantId, snap, attributes);
    if (t instanceof Promise || a instanceof Promise) return Promise.all([t, a]);
    return [t, a];
  }

  listObjectIds(tenantId: string, snap: Snap, type: string): MaybePromise<string[]> {
    return this.inner.listObjectIds(tenantId, snap, type);
  }

  readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Tuple>> {
    return this.inner.readTuples(tenantId, snap, filter, pageSize, cursor);
  }

  readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Attribute>> {
    return this.inner.readAttributes(tenantId, snap, filter, pageSize, cursor);
  }

  changes(tenantId: string, after: Snap, limit: number): Promise<ChangeSet[]> {
    return this.inner.changes(tenantId, after, limit);
  }

  writeBundles(tenantId: string, bundles: DataBundle[]): Promise<void> {
    return this.inner.writeBundles(tenantId, bundles);
  }

  readBundle(tenantId: string, name: string): Promise<DataBundle | undefined> {
    return this.inner.readBundle(tenantId, name);
  }

  deleteBundle(tenantId: string, name: string): Promise<boolean> {
    return this.inner.deleteBundle(tenantId, name);
  }

  gc(olderThan: Date): Promise<number> {
    return this.inner.gc(olderThan);
  }

  // a replicated inner store's (D1) replication position travels in snap tokens unchanged
  consistencyBookmark(tenantId: string): string | undefined {
    return this.inner.consistencyBookmark?.(tenantId);
  }

  readAfterBookmark(tenantId: string, bookmark: string): void {
    this.inner.readAfterBookmark?.(tenantId, bookmark);
  }

  queriesLeft(): number {
    return hasQueryBudget(this.inner) ? this.inner.queriesLeft() : Number.POSITIVE_INFINITY;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
