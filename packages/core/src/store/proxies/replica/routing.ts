/**
 * ReplicaStore: an in-memory replica (load.ts keeps the copy) in front of a SQL store, so that engine reads (checks,
 * lookups, expand) never touch SQL in the steady state. Every call is routed here:
 *
 * - Engine reads at a snap the copy covers (floor <= snap <= caught up) answer from memory, synchronously; a read
 *   at a newer snap (a snap token from another instance) catches the tenant up first and never answers from a
 *   stale copy; a read at an older snap (a snap token older than the replica) or of a tenant the copy does not
 *   hold goes to the inner store.
 * - Writes of this process: inner.write, then a catch-up to the write's snap before returning (read-your-writes).
 *   Where the inner store reads the feed in the write's own transaction (WriteFeed: PostgreSQL) and no other write
 *   of the tenant is in flight here, the write brings its catch-up along: no statement after it.
 * - Everything else (schemas, paged reads whose cursors are the inner store's, the feed, bundles, D1 bookmarks)
 *   is the inner store's: ForwardingStore.
 *
 * `ReplicaStore.open` loads every tenant at open and refreshes on a timer (`refreshMs`); when the load passes
 * `maxRows` rows it returns the inner store itself (reads go to SQL), with a log line saying so. Runtimes where I/O
 * may only happen inside a request (Cloudflare Workers: no background timers) use `ReplicaStore.lazy`: no timer,
 * each tenant is loaded on first use (once per isolate) unless its rows would take the replica above `maxRows`
 * (its reads then go to the inner store), and freshness is request-driven: reading a loaded tenant's head snap
 * (once per check) costs no statement while the tenant's last look at the database is younger than `freshnessMs`,
 * else ONE round trip (head snap, GC horizon, the tenant's created_at and head schema, with the change feed after
 * the copy: one D1 batch); with `background`, a look due less than `2 x freshnessMs` after the last runs once the
 * response is ready instead of before it. With `background` (the Worker), no request waits for a tenant's load: the
 * first read starts it and, until it ends, the tenant's reads go to the inner store (one statement per walk level).
 * A fresh snap token's reads of a tenant not held, over a store with a NearestReplica (D1): at the request's nearest
 * replica, with the primary's changes since its head laid over them (overlay.ts): one primary round trip in all.
 */
import { PembaError } from "../../../errors.ts";
import type { Attribute, Tuple } from "../../../model.ts";
import {
  type CombinedReads,
  type EngineReads,
  type HeadSchemaSource,
  hasNearestReplica,
  hasWriteFeed,
  hasWriteNotices,
  queryBoth,
} from "../../capabilities.ts";
import type { MemoryStore } from "../../memory/memory-store.ts";
import type {
  AttributeQuery,
  HeadSchemaListener,
  MaybePromise,
  Snap,
  Store,
  SubjectTupleQuery,
  Tenant,
  TupleQuery,
  WriteRequest,
} from "../../store.ts";
import { ForwardingStore } from "../forwarding.ts";
import {
  BACKGROUND_LOAD_PAGE_SIZE,
  type BackgroundLoads,
  DEFAULT_REPLICA_REFRESH_MS,
  type LazyReplicaOptions,
  type ReplicaOptions,
  type ReplicaSource,
  TenantCopies,
  type TenantState,
} from "./load.ts";
import { laidOver, NearestOverlays } from "./overlay.ts";

const expired = () => new PembaError("ERROR_CODE_SNAP_TOKEN_EXPIRED");

export interface ReplicaStats {
  tenants: number;
  /** Rows loaded at open plus rows created since, minus rows deleted since (approximate live count). */
  rows: number;
  /** The copy's estimated bytes (see rowBytes). */
  bytes: number;
  loadMs: number;
}

export class ReplicaStore extends ForwardingStore implements HeadSchemaSource {
  private readonly copies: TenantCopies;
  private readonly memory: MemoryStore;
  private readonly refreshMs: number;
  private readonly logger?: ReplicaOptions["logger"];
  /** Lazy replicas loading in the background: keeps a load alive past its request. */
  private readonly background?: BackgroundLoads;
  private loadMs = 0;
  private timer?: ReturnType<typeof setInterval>;
  private refreshing?: Promise<void>;
  private closed = false;
  /** Writes in flight per tenant: the feed is read within a write only while it is the tenant's only one. */
  private readonly writing = new Map<string, number>();
  /** The newest write notice heard per tenant while a write of it was in flight here. */
  private readonly noticed = new Map<string, Snap>();
  /**
   * Lazy replicas over a replicated database (D1): a fresh token's reads of a tenant not held, at the nearest
   * replica with the primary's changes laid over them (overlay.ts).
   */
  private readonly overlays?: NearestOverlays;

  private notice(tenantId: string, snap: Snap): void {
    this.copies.notice(tenantId, snap).catch((e: unknown) => {
      this.logger?.warn({ err: e, tenant: tenantId }, "replica catch-up after a write notice failed");
    });
  }

  /** A write of the tenant ended: the notices heard meanwhile catch the copy up (mostly nothing left to read). */
  private writeEnded(tenantId: string): void {
    const left = this.writing.get(tenantId)! - 1;
    if (left > 0) {
      this.writing.set(tenantId, left);
      return;
    }
    this.writing.delete(tenantId);
    const snap = this.noticed.get(tenantId);
    if (snap === undefined) return;
    this.noticed.delete(tenantId);
    this.notice(tenantId, snap);
  }

  private constructor(
    inner: Store & ReplicaSource,
    opts: ReplicaOptions,
    freshnessMs?: number,
    background?: BackgroundLoads,
  ) {
    super(inner);
    this.background = background;
    this.copies = new TenantCopies(inner, opts, freshnessMs);
    this.memory = this.copies.memory;
    this.refreshMs = opts.refreshMs ?? DEFAULT_REPLICA_REFRESH_MS;
    this.logger = opts.logger;
    const feed = inner.freshnessAndChanges?.bind(inner);
    if (freshnessMs !== undefined && hasNearestReplica(inner) && feed !== undefined) {
      this.overlays = new NearestOverlays({
        nearestReplica: () => inner.nearestReplica(),
        freshnessAndChanges: feed,
      });
    }
  }

  /**
   * Loads every tenant of `inner` into memory and starts the refresh timer. Returns the inner store itself
   * (no replica) when it holds more than `maxRows` rows.
   */
  static async open(inner: Store & ReplicaSource, opts: ReplicaOptions = {}): Promise<Store> {
    const replica = new ReplicaStore(inner, opts);
    const copies = replica.copies;
    const started = performance.now();
    if (!(await copies.loadAll())) {
      opts.logger?.warn(
        { store: inner.kind, maxRows: copies.maxRows },
        `replica disabled: the database holds more than ${copies.maxRows} rows (--replica-max-rows); reads go to SQL`,
      );
      return inner;
    }
    replica.loadMs = performance.now() - started;
    opts.logger?.info(
      { store: inner.kind, tenants: copies.tenants, rows: copies.rows, ms: Math.round(replica.loadMs) },
      `replica loaded ${copies.rows} rows of ${copies.tenants} tenant(s) in ${Math.round(replica.loadMs)} ms`,
    );
    // writes of other processes: at once where the store hears of them, the timer as the fallback
    if (hasWriteNotices(inner)) {
      await inner.onWrite((tenantId, snap) => {
        if (replica.closed) return;
        // a write of the tenant in flight here catches the copy up when it ends (its own notice usually arrives
        // before its answer): the notice waits for it, so the two do not both read the feed
        if (replica.writing.has(tenantId)) {
          replica.noticed.set(tenantId, Math.max(snap, replica.noticed.get(tenantId) ?? 0));
          return;
        }
        replica.notice(tenantId, snap);
      });
      // writes between the load and the first notice heard
      await replica.refresh();
    }
    if (replica.refreshMs > 0) {
      const timer = setInterval(() => void replica.refresh(), replica.refreshMs);
      // Node: the timer alone keeps no process alive
      if (typeof timer === "object" && "unref" in timer) timer.unref();
      replica.timer = timer;
    }
    return replica;
  }

  /**
   * A replica without a timer that loads each tenant on first use (see the module comment): for Workers. Nothing
   * is read before the first request.
   */
  static lazy(inner: Store & ReplicaSource, opts: LazyReplicaOptions = {}): ReplicaStore {
    const { background, freshnessMs, ...rest } = opts;
    return new ReplicaStore(
      inner,
      {
        ...rest,
        refreshMs: 0,
        loadPageSize: rest.loadPageSize ?? (background ? BACKGROUND_LOAD_PAGE_SIZE : undefined),
      },
      freshnessMs ?? DEFAULT_REPLICA_REFRESH_MS,
      background,
    );
  }

  /**
   * Lazy replicas: `listener` hears the head schema version each look at the database read (with the snap of that
   * read), so the schema registry keeps its cached head fresh without statements of its own.
   */
  onHeadSchema(listener: HeadSchemaListener): void {
    this.copies.onHeadSchema(listener);
  }

  /** Whether the tenant's reads are answered from memory (loaded) rather than by the inner store. */
  holds(tenantId: string): boolean {
    return this.copies.state(tenantId) !== undefined;
  }

  stats(): ReplicaStats {
    return {
      tenants: this.copies.tenants,
      rows: this.copies.rows,
      bytes: this.copies.bytes,
      loadMs: this.loadMs,
    };
  }

  /** One refresh round: tenants created/deleted elsewhere, the inner head, the GC horizon. */
  refresh(): Promise<void> {
    this.refreshing ??= this.refreshOnce().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async refreshOnce(): Promise<void> {
    if (this.closed) return;
    try {
      await this.copies.refreshAll();
    } catch (e) {
      this.logger?.warn({ err: e }, "replica refresh failed; retrying at the next interval");
    }
  }

  // ---- reads answered from memory ----

  /** Whether the copy answers reads of the tenant at `snap` right now (no I/O). */
  private covers(tenantId: string, snap: Snap): boolean {
    const st = this.copies.state(tenantId);
    return st !== undefined && snap <= st.caughtUp && snap >= st.floor;
  }

  /** A read the copy does not cover yet: load or catch the tenant up, or ask the inner store. */
  private async slow<T>(
    tenantId: string,
    snap: Snap,
    fromMemory: () => MaybePromise<T>,
    fromInner: () => MaybePromise<T>,
  ): Promise<T> {
    for (;;) {
      const st =
        this.background === undefined
          ? await this.copies.ensure(tenantId)
          : this.copies.loadLater(tenantId, this.background);
      if (st === undefined || snap < st.floor) return await fromInner();
      if (snap > st.caughtUp) {
        // loaded since this request's look set its reads up at the nearest replica: no second look
        if (this.overlays?.at(tenantId, snap) !== undefined) return await fromInner();
        await this.copies.reach(st, snap);
      }
      if (this.copies.state(tenantId) === st) return fromMemory();
    }
  }

  /**
   * An engine read (`read`, the same call of whichever store answers it at a snap): of the copy where it covers
   * `snap`, else once the tenant is loaded or caught up; else in SQL, at the nearest replica with the primary's
   * changes laid over the rows when this request's fresh token set that up (overlay.ts; `rows` names the rows a
   * result holds), else in the request's own session (the inner store).
   */
  private engineRead<T>(
    tenantId: string,
    snap: Snap,
    read: (store: EngineReads & Partial<CombinedReads>, snap: Snap) => MaybePromise<T>,
    rows: (result: T) => { tuples?: Tuple[]; attributes?: Attribute[] },
  ): MaybePromise<T> {
    const fromMemory = () => read(this.memory, snap);
    if (this.covers(tenantId, snap)) return fromMemory();
    return this.slow(tenantId, snap, fromMemory, () => {
      const overlay = this.overlays?.at(tenantId, snap);
      if (overlay === undefined) return read(this.inner, snap);
      return laidOver(overlay, tenantId, snap, (r) => read(r, snap), rows, read);
    });
  }

  override headSnap(tenantId: string): MaybePromise<Snap> {
    const st = this.copies.state(tenantId);
    if (st !== undefined) {
      this.copies.touch(st);
      const window = this.copies.freshnessMs;
      if (window === undefined) return st.caughtUp;
      const age = Date.now() - st.checkedAt;
      if (age < window) return st.caughtUp;
      // with background work (the Worker), a look due less than one more window ago runs once this response is
      // ready: no check waits for it, and a check without a token sees writes elsewhere within two windows
      if (this.background !== undefined && age < 2 * window) {
        st.checkedAt = Date.now();
        this.background(() =>
          this.copies.freshen(st).catch((e: unknown) => {
            this.logger?.warn({ err: e, tenant: tenantId }, "replica: a look at the database failed");
          }),
        );
        return st.caughtUp;
      }
      return this.copies.freshen(st).then((head) => head ?? this.headSnap(tenantId));
    }
    if (this.copies.isOversized(tenantId)) return this.inner.headSnap(tenantId);
    if (this.background !== undefined) {
      this.copies.loadLater(tenantId, this.background);
      return this.inner.headSnap(tenantId);
    }
    return (async () => {
      const loaded = await this.copies.ensure(tenantId);
      return loaded !== undefined ? loaded.caughtUp : await this.inner.headSnap(tenantId);
    })();
  }

  /**
   * A snap token's check. Lazy replicas answer a token newer than the copy (another instance's write) with ONE look
   * at the database, in the request's session (so at a replica that has the token's write, else the primary): for
   * a loaded tenant it also catches the copy up to the token (the look and the feed in one round trip); for any
   * tenant it reports the head schema at a snap >= the token, so the schema registry need not read it again.
   */
  override assertSnapReadable(tenantId: string, snap: Snap): MaybePromise<void> {
    if (snap < this.copies.horizon) throw expired();
    const st = this.copies.state(tenantId);
    const lazy = this.copies.freshnessMs !== undefined && this.copies.horizonKnown;
    if (st !== undefined && snap >= st.floor && this.copies.horizonKnown) {
      if (!lazy || snap <= st.caughtUp) return;
      return this.copies.freshen(st).then(() => {
        if (snap < this.copies.horizon) throw expired();
      });
    }
    const overlays = this.overlays;
    if (lazy && overlays !== undefined) {
      return overlays.look(tenantId, snap).then((f) => {
        this.copies.heard(tenantId, f);
        if (snap < f.horizon) throw expired();
      });
    }
    if (lazy && !this.copies.isOversized(tenantId)) {
      return this.copies.look(tenantId).then((f) => {
        if (snap < f.horizon) throw expired();
      });
    }
    return this.inner.assertSnapReadable(tenantId, snap);
  }

  override queryTuples(
    tenantId: string,
    snap: Snap,
    queries: TupleQuery[],
    at: number = Date.now(),
  ): MaybePromise<Tuple[]> {
    return this.engineRead(
      tenantId,
      snap,
      (s, snap) => s.queryTuples(tenantId, snap, queries, at),
      (tuples) => ({ tuples }),
    );
  }

  override querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at: number = Date.now(),
  ): MaybePromise<Tuple[]> {
    return this.engineRead(
      tenantId,
      snap,
      (s, snap) => s.querySubjectTuples(tenantId, snap, queries, at),
      (tuples) => ({ tuples }),
    );
  }

  override queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at: number = Date.now(),
  ): MaybePromise<Attribute[]> {
    return this.engineRead(
      tenantId,
      snap,
      (s, snap) => s.queryAttributes(tenantId, snap, queries, at),
      (attributes) => ({ attributes }),
    );
  }

  override queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at: number = Date.now(),
  ): MaybePromise<[Tuple[], Attribute[]]> {
    return this.engineRead(
      tenantId,
      snap,
      (s, snap) => queryBoth(s, tenantId, snap, tuples, attributes, at),
      ([t, a]) => ({ tuples: t, attributes: a }),
    );
  }

  override listObjectIds(
    tenantId: string,
    snap: Snap,
    type: string,
    at: number = Date.now(),
  ): MaybePromise<string[]> {
    if (this.covers(tenantId, snap)) return this.memory.listObjectIds(tenantId, snap, type, at);
    return this.slow(
      tenantId,
      snap,
      () => this.memory.listObjectIds(tenantId, snap, type, at),
      () => this.inner.listObjectIds(tenantId, snap, type, at),
    );
  }

  // ---- writes ----

  override async write(tenantId: string, req: WriteRequest): Promise<Snap> {
    const st = this.copies.state(tenantId);
    const inner = this.inner;
    const alone = !this.writing.has(tenantId);
    this.writing.set(tenantId, (this.writing.get(tenantId) ?? 0) + 1);
    let snap: Snap;
    try {
      // concurrent writes of one tenant each reading the feed would read each other's changes again and again;
      // the catch-up after the write serves them together instead
      if (st === undefined || !alone || !hasWriteFeed(inner)) snap = await inner.write(tenantId, req);
      else {
        const from = Math.max(st.caughtUp, st.applied);
        const read = await inner.writeReadingFeed(tenantId, req, from);
        snap = read.snap;
        try {
          await this.copies.catchUp(st, snap, true, { from, sets: read.sets, horizon: read.horizon });
        } catch (e) {
          this.logger?.warn({ err: e, tenant: tenantId }, "replica catch-up after a write failed");
        }
        // the copy held meanwhile is caught up, unless the tenant was dropped or reloaded during the write
        if (this.copies.state(tenantId) === st) return snap;
      }
    } finally {
      this.writeEnded(tenantId);
    }
    try {
      // a write never waits for a whole tenant's load: a background load covers it, or reads catch up to it
      let now: TenantState | undefined;
      if (this.background === undefined) now = await this.copies.ensure(tenantId);
      else {
        now = this.copies.state(tenantId);
        if (now === undefined) this.copies.notWaitedWrite(tenantId);
      }
      if (now !== undefined) await this.copies.catchUp(now, snap, true);
    } catch (e) {
      // the write is committed; reads at its snap catch up on their own
      this.logger?.warn({ err: e, tenant: tenantId }, "replica catch-up after a write failed");
    }
    return snap;
  }

  override async gc(olderThan: Date): Promise<number> {
    const removed = await this.inner.gc(olderThan);
    await this.copies.readHorizon();
    return removed;
  }

  // ---- tenants ----

  override async createTenant(id: string, name: string): Promise<Tenant> {
    const tenant = await this.inner.createTenant(id, name);
    this.copies.drop(id);
    await this.copies.ensure(id, tenant);
    return tenant;
  }

  override async deleteTenant(id: string): Promise<Tenant | undefined> {
    const deleted = await this.inner.deleteTenant(id);
    this.copies.drop(id);
    return deleted;
  }

  override async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.refreshing;
    await this.inner.close();
  }
}
