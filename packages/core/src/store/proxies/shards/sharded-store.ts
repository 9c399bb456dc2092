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
import { hasEmptyTenants, hasQueryBudget, type SnapDatabases } from "../../capabilities.ts";
import { encodeCursor } from "../../cursor.ts";
import type {
  HeadSchemaListener,
  HeadSchemaRecord,
  Page,
  Snap,
  Store,
  Tenant,
  WriteRequest,
} from "../../store.ts";
import type { DataBundle } from "../../types.ts";
import { ForwardingStore } from "../forwarding.ts";
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

/** Tenants whose database is remembered (placement hashes once per tenant); past it the memo starts over. */
const MEMO_TENANTS = 10_000;

/**
 * Every call about one tenant goes to its database's store (ForwardingStore's `storeFor`); the calls about tenants,
 * and those that may find a tenant on another database, are its own.
 */
export class ShardedStore extends ForwardingStore implements SnapDatabases {
  readonly placement: TenantPlacement;
  readonly #shards: ReadonlyMap<string, ShardEntry>;
  readonly #first: string;
  readonly #opts: ShardedStoreOptions;
  /** tenant id -> its database, as placement said. */
  readonly #memo = new Map<string, ShardEntry>();

  /** Write notices would come from the first database only: none (D1 has none; the replicas look themselves). */
  override readonly onWrite: undefined = undefined;

  /** Every database's head schema reads (lazy replicas' looks), when each one reports them (HeadSchemaSource). */
  readonly onHeadSchema?: (listener: HeadSchemaListener) => void;

  constructor(shards: readonly Shard[], placement: TenantPlacement, opts: ShardedStoreOptions = {}) {
    super(shards[0]!.store);
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

  /** The tenant's database. */
  #shardOf(tenantId: string): ShardEntry {
    let shard = this.#memo.get(tenantId);
    if (shard === undefined) {
      shard = this.#shards.get(this.placement.databaseOf(tenantId))!;
      if (this.#memo.size >= MEMO_TENANTS) this.#memo.clear();
      this.#memo.set(tenantId, shard);
    }
    return shard;
  }

  /** The store of the tenant's database. */
  protected override storeFor(tenantId: string): Store {
    return this.#shardOf(tenantId).store;
  }

  // ---- snap tokens ----

  snapDatabase(tenantId: string): string | undefined {
    const { name } = this.#shardOf(tenantId);
    return name === this.#first ? undefined : name;
  }

  /** A request touches one database (tenant calls) or sends one or two statements to each (tenant create/list). */
  override queriesLeft(): number {
    let left = Number.POSITIVE_INFINITY;
    for (const { store } of this.#shards.values()) {
      if (hasQueryBudget(store)) left = Math.min(left, store.queriesLeft());
    }
    return left;
  }

  // ---- tenants: every database ----

  override async createTenant(id: string, name: string): Promise<Tenant> {
    const found = await this.#everywhere((s) => s.getTenant(id));
    if (found.some((t) => t !== undefined)) throw new PembaError("ERROR_CODE_ALREADY_EXIST");
    return this.storeFor(id).createTenant(id, name);
  }

  override async getTenant(id: string): Promise<Tenant | undefined> {
    return (await this.storeFor(id).getTenant(id)) ?? (await this.#follow(id));
  }

  /** Removes the tenant from every database that has it (one, unless a move was cut short). */
  override async deleteTenant(id: string): Promise<Tenant | undefined> {
    const deleted = await this.#everywhere((s) => s.deleteTenant(id));
    return deleted.find((t) => t !== undefined);
  }

  /**
   * Every database's page from the same cursor, merged by id: the page is the first `pageSize` ids of all of them,
   * its cursor the last of those ids (a tenant on two databases, a move cut short, is listed once).
   */
  override async listTenants(pageSize: number, cursor?: string): Promise<Page<Tenant>> {
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
    const home = this.#shardOf(id);
    const others = [...this.#shards.values()].filter((s) => s !== home);
    const found = await Promise.all(others.map((s) => s.database.getTenant(id)));
    const at = found.findIndex((t) => t !== undefined);
    if (at < 0) return undefined;
    return await this.#move(found[at]!, others[at]!, home);
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
      return await call(this.storeFor(tenantId));
    } catch (e) {
      if (!(e instanceof PembaError && e.code === "ERROR_CODE_TENANT_NOT_FOUND")) throw e;
      if ((await this.#follow(tenantId)) === undefined) throw e;
      return await call(this.storeFor(tenantId));
    }
  }

  // ---- schemas ----

  override writeSchema(tenantId: string, version: string, schema: string): Promise<void> {
    return this.#withTenant(tenantId, (s) => s.writeSchema(tenantId, version, schema));
  }

  /** A tenant without a head schema may be one on another database: it follows (or its request fails). */
  override async headSchema(tenantId: string): Promise<HeadSchemaRecord | undefined> {
    const head = await this.storeFor(tenantId).headSchema(tenantId);
    if (head !== undefined) return head;
    await this.#follow(tenantId);
    return undefined;
  }

  // ---- data ----

  override write(tenantId: string, req: WriteRequest): Promise<Snap> {
    return this.#withTenant(tenantId, (s) => s.write(tenantId, req));
  }

  // ---- bundles ----

  override writeBundles(tenantId: string, bundles: DataBundle[]): Promise<void> {
    return this.#withTenant(tenantId, (s) => s.writeBundles(tenantId, bundles));
  }

  // ---- every database ----

  override async gc(olderThan: Date): Promise<number> {
    const removed = await this.#everywhere((s) => s.gc(olderThan));
    return removed.reduce((a, b) => a + b, 0);
  }

  override async close(): Promise<void> {
    await this.#everywhere((s) => s.close());
  }
}
