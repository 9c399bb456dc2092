/**
 * ShardedStore: tenants over several databases (the Worker's D1 bindings), each tenant on ONE of them as
 * TenantPlacement says (a pin, else rendezvous hashing). Every tenant call goes to the tenant's database (with its
 * own snaps, GC horizon and replica: createPemba puts a replica in front of each database, all under one byte and
 * row budget); the calls about tenants span them all:
 *
 * - create: refused with ERROR_CODE_ALREADY_EXIST when any database has the tenant, else made on its database;
 * - list: every database's page from the same cursor (the last id of the previous page: every SQL store pages its
 *   tenants by id), merged by id, so pages are in id order across databases and the same for every caller;
 * - delete: removed from every database that has it.
 *
 * Snap tokens name their database (SnapDatabases): a snap counts ONE database's transactions, so the service refuses
 * a token of another database; tenants of the first database get tokens without a name, as with one database.
 *
 * A tenant found missing on its database (a changed pin or a new database moved it) is looked for on the others:
 * one holding nothing follows (created on its new database, then deleted from the old one in ONE transaction that
 * checks it is still empty, so a racing write is never lost); one holding data stays where it is, and its requests
 * fail with an error naming both databases and the pin that keeps it where its data is.
 */
import { PembaError } from "../../../errors.ts";
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../../model.ts";
import {
  type CombinedReads,
  hasCombinedReads,
  hasEmptyTenants,
  hasQueryBudget,
  type QueryBudget,
  type SnapBookmarks,
  type SnapDatabases,
} from "../../capabilities.ts";
import { encodeCursor } from "../../cursor.ts";
import type {
  AttributeQuery,
  ChangeSet,
  DataBundle,
  HeadSchemaListener,
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
} from "../../store.ts";
import type { TenantPlacement } from "./placement.ts";

export interface Shard {
  /** The database's name (the Worker: its D1 binding), as placement and snap tokens name it. */
  name: string;
  /** What the tenant calls go to: the database, or a replica in front of it. */
  store: Store;
  /** The database itself (deletes a moved tenant only while it is empty); default `store`. */
  database?: Store;
}

export interface ShardedStoreOptions {
  /** Where the pins are set, for the error of a tenant with data on another database (the Worker's variable). */
  pinSetting?: string;
}

interface ShardEntry {
  name: string;
  store: Store;
  database: Store;
}

export class ShardedStore implements Store, CombinedReads, SnapBookmarks, SnapDatabases, QueryBudget {
  readonly kind: Store["kind"];
  readonly placement: TenantPlacement;
  readonly #shards: ReadonlyMap<string, ShardEntry>;
  readonly #first: string;
  readonly #opts: ShardedStoreOptions;
  /** The last tenant routed and its store: a request's calls are for one tenant. */
  #lastTenant: string | undefined;
  #lastStore: Store | undefined;

  /** Every database's head schema reads (lazy replicas' looks), when each one reports them (HeadSchemaSource). */
  readonly onHeadSchema?: (listener: HeadSchemaListener) => void;

  constructor(shards: readonly Shard[], placement: TenantPlacement, opts: ShardedStoreOptions = {}) {
    const names = shards.map((s) => s.name);
    if (names.join("\n") !== placement.databases.join("\n")) {
      throw new Error(
        `ShardedStore: shards ${names.join(",")} differ from placement ${placement.databases.join(",")}`,
      );
    }
    this.#shards = new Map(shards.map((s) => [s.name, { ...s, database: s.database ?? s.store }]));
    this.#first = names[0]!;
    this.placement = placement;
    this.#opts = opts;
    this.kind = shards[0]!.store.kind;
    const stores = shards.map((s) => s.store);
    if (stores.every((s) => s.onHeadSchema !== undefined)) {
      this.onHeadSchema = (listener) => {
        for (const s of stores) s.onHeadSchema!(listener);
      };
    }
  }

  /** The same placement over each database's store wrapped by `wrap` (createPemba: a replica in front of each). */
  withEach(wrap: (store: Store, name: string) => Store): ShardedStore {
    const shards = [...this.#shards.values()].map((s) => ({
      name: s.name,
      store: wrap(s.store, s.name),
      database: s.database,
    }));
    return new ShardedStore(shards, this.placement, this.#opts);
  }

  /** The stores, by database name. */
  get shards(): ReadonlyMap<string, Store> {
    return new Map([...this.#shards.values()].map((s) => [s.name, s.store]));
  }

  /** The store of the tenant's database. */
  storeOf(tenantId: string): Store {
    if (tenantId === this.#lastTenant) return this.#lastStore!;
    const store = this.#shards.get(this.placement.databaseOf(tenantId))!.store;
    this.#lastTenant = tenantId;
    this.#lastStore = store;
    return store;
  }

  // ---- snap tokens ----

  snapDatabase(tenantId: string): string | undefined {
    const db = this.placement.databaseOf(tenantId);
    return db === this.#first ? undefined : db;
  }

  consistencyBookmark(tenantId: string): string | undefined {
    return this.storeOf(tenantId).consistencyBookmark?.(tenantId);
  }

  readAfterBookmark(tenantId: string, bookmark: string): void {
    this.storeOf(tenantId).readAfterBookmark?.(tenantId, bookmark);
  }

  /** A request touches one database (tenant calls) or sends one or two statements to each (tenant create/list). */
  queriesLeft(): number {
    let left = Number.POSITIVE_INFINITY;
    for (const { store } of this.#shards.values()) {
      if (hasQueryBudget(store)) left = Math.min(left, store.queriesLeft());
    }
    return left;
  }

  // ---- tenants: every database ----

  async createTenant(id: string, name: string): Promise<Tenant> {
    const found = await this.#everywhere((s) => s.getTenant(id));
    if (found.some((t) => t !== undefined)) throw new PembaError("ERROR_CODE_ALREADY_EXIST");
    return this.storeOf(id).createTenant(id, name);
  }

  async getTenant(id: string): Promise<Tenant | undefined> {
    return (await this.storeOf(id).getTenant(id)) ?? (await this.#follow(id));
  }

  /** Removes the tenant from every database that has it (one, unless a move was cut short). */
  async deleteTenant(id: string): Promise<Tenant | undefined> {
    const deleted = await this.#everywhere((s) => s.deleteTenant(id));
    return deleted.find((t) => t !== undefined);
  }

  /**
   * Every database's page from the same cursor, merged by id: the page is the first `pageSize` ids of all of them,
   * its cursor the last of those ids (a tenant on two databases, a move cut short, is listed once).
   */
  async listTenants(pageSize: number, cursor?: string): Promise<Page<Tenant>> {
    const pages = await this.#everywhere((s) => s.listTenants(pageSize, cursor));
    const byId = new Map<string, Tenant>();
    for (const page of pages) for (const t of page.items) if (!byId.has(t.id)) byId.set(t.id, t);
    const merged = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const limit = pageSize > 0 ? pageSize : merged.length;
    const items = merged.slice(0, limit);
    const more = merged.length > limit || pages.some((p) => p.cursor !== "");
    return { items, cursor: more && items.length > 0 ? encodeCursor(items[items.length - 1]!.id) : "" };
  }

  async #everywhere<T>(call: (store: Store) => Promise<T>): Promise<T[]> {
    return await Promise.all([...this.#shards.values()].map((s) => call(s.store)));
  }

  /**
   * The tenant is not on its database: when another one has it, it follows if it holds nothing, else its request
   * fails naming both databases. Undefined when no database has it.
   */
  async #follow(id: string): Promise<Tenant | undefined> {
    const home = this.placement.databaseOf(id);
    const others = [...this.#shards.values()].filter((s) => s.name !== home);
    const found = await Promise.all(others.map((s) => s.database.getTenant(id)));
    const at = found.findIndex((t) => t !== undefined);
    if (at < 0) return undefined;
    return await this.#move(found[at]!, others[at]!, this.#shards.get(home)!);
  }

  async #move(tenant: Tenant, from: ShardEntry, to: ShardEntry): Promise<Tenant> {
    const source = from.database;
    if (!hasEmptyTenants(source)) throw this.#stays(tenant.id, from.name, to.name);
    let moved: Tenant;
    try {
      moved = await to.store.createTenant(tenant.id, tenant.name);
    } catch (e) {
      // another request moved it meanwhile
      if (e instanceof PembaError && e.code === "ERROR_CODE_ALREADY_EXIST") {
        const there = await to.store.getTenant(tenant.id);
        if (there !== undefined) return there;
      }
      throw e;
    }
    const gone = await source.deleteEmptyTenant(tenant.id);
    if (gone !== undefined && "notEmpty" in gone) {
      await to.store.deleteTenant(tenant.id);
      throw this.#stays(tenant.id, from.name, to.name);
    }
    return moved;
  }

  #stays(id: string, at: string, placed: string): PembaError {
    const setting = this.#opts.pinSetting ?? "the tenant pins";
    return new PembaError(
      "ERROR_CODE_INTERNAL",
      `tenant ${id} holds data on database ${at}, but its placement is now ${placed}: a tenant with data does not move; pin it where its data is (${id}=${at} in ${setting})`,
    );
  }

  /** Runs a call on the tenant's database; a tenant missing there that followed from another one runs it again. */
  async #withTenant<T>(tenantId: string, call: (store: Store) => Promise<T>): Promise<T> {
    try {
      return await call(this.storeOf(tenantId));
    } catch (e) {
      if (!(e instanceof PembaError && e.code === "ERROR_CODE_TENANT_NOT_FOUND")) throw e;
      if ((await this.#follow(tenantId)) === undefined) throw e;
      return await call(this.storeOf(tenantId));
    }
  }

  // ---- schemas ----

  writeSchema(tenantId: string, version: string, schema: string): Promise<void> {
    return this.#withTenant(tenantId, (s) => s.writeSchema(tenantId, version, schema));
  }

  readSchema(tenantId: string, version: string): Promise<SchemaRecord | undefined> {
    return this.storeOf(tenantId).readSchema(tenantId, version);
  }

  /** A tenant without a head schema may be one on another database: it follows (or its request fails). */
  async headSchema(tenantId: string): Promise<HeadSchemaRecord | undefined> {
    const head = await this.storeOf(tenantId).headSchema(tenantId);
    if (head !== undefined) return head;
    await this.#follow(tenantId);
    return undefined;
  }

  listSchemas(tenantId: string, pageSize: number, cursor?: string): Promise<Page<SchemaRecord>> {
    return this.storeOf(tenantId).listSchemas(tenantId, pageSize, cursor);
  }

  // ---- data ----

  write(tenantId: string, req: WriteRequest): Promise<Snap> {
    return this.#withTenant(tenantId, (s) => s.write(tenantId, req));
  }

  headSnap(tenantId: string): MaybePromise<Snap> {
    return this.storeOf(tenantId).headSnap(tenantId);
  }

  assertSnapReadable(tenantId: string, snap: Snap): MaybePromise<void> {
    return this.storeOf(tenantId).assertSnapReadable(tenantId, snap);
  }

  queryTuples(tenantId: string, snap: Snap, queries: TupleQuery[]): MaybePromise<Tuple[]> {
    return this.storeOf(tenantId).queryTuples(tenantId, snap, queries);
  }

  querySubjectTuples(tenantId: string, snap: Snap, queries: SubjectTupleQuery[]): MaybePromise<Tuple[]> {
    return this.storeOf(tenantId).querySubjectTuples(tenantId, snap, queries);
  }

  queryAttributes(tenantId: string, snap: Snap, queries: AttributeQuery[]): MaybePromise<Attribute[]> {
    return this.storeOf(tenantId).queryAttributes(tenantId, snap, queries);
  }

  queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
  ): MaybePromise<[Tuple[], Attribute[]]> {
    const store = this.storeOf(tenantId);
    if (hasCombinedReads(store)) return store.queryTuplesAndAttributes(tenantId, snap, tuples, attributes);
    const t = store.queryTuples(tenantId, snap, tuples);
    const a = store.queryAttributes(tenantId, snap, attributes);
    if (t instanceof Promise || a instanceof Promise) return Promise.all([t, a]);
    return [t, a];
  }

  listObjectIds(tenantId: string, snap: Snap, type: string): MaybePromise<string[]> {
    return this.storeOf(tenantId).listObjectIds(tenantId, snap, type);
  }

  readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Tuple>> {
    return this.storeOf(tenantId).readTuples(tenantId, snap, filter, pageSize, cursor);
  }

  readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Attribute>> {
    return this.storeOf(tenantId).readAttributes(tenantId, snap, filter, pageSize, cursor);
  }

  changes(tenantId: string, after: Snap, limit: number): Promise<ChangeSet[]> {
    return this.storeOf(tenantId).changes(tenantId, after, limit);
  }

  // ---- bundles ----

  writeBundles(tenantId: string, bundles: DataBundle[]): Promise<void> {
    return this.#withTenant(tenantId, (s) => s.writeBundles(tenantId, bundles));
  }

  readBundle(tenantId: string, name: string): Promise<DataBundle | undefined> {
    return this.storeOf(tenantId).readBundle(tenantId, name);
  }

  deleteBundle(tenantId: string, name: string): Promise<boolean> {
    return this.storeOf(tenantId).deleteBundle(tenantId, name);
  }

  // ---- every database ----

  async gc(olderThan: Date): Promise<number> {
    const removed = await this.#everywhere((s) => s.gc(olderThan));
    return removed.reduce((a, b) => a + b, 0);
  }

  async close(): Promise<void> {
    await this.#everywhere((s) => s.close());
  }
}
