/**
 * ReplicaStore: an in-memory replica (a MemoryStore) in front of a SQL store, so that engine reads (checks,
 * lookups, expand) never touch SQL in the steady state.
 *
 * - Load: every tenant is loaded at open from its live rows at the store head `h` (paged readTuples/readAttributes
 *   at `h`, each page applied as a change set at a snap <= `h`). Replaying the change feed from 0 would not do: after
 *   a GC the feed skips every transaction at or before the GC horizon, so rows created before the horizon and
 *   still live would be missing. The memory copy is exact for snaps >= `floor` (= `h`); reads at older snaps go
 *   to the inner store (rare: a snap token older than the replica).
 * - Catch-up: the tenant's change feed after its caught-up snap, applied with `MemoryStore.applyChangeSet`.
 *   Transaction ids are assigned in commit order by every SQL driver (the id counter row is updated first in
 *   each write transaction and stays locked until commit), so a feed read that sees snap `x` has every change
 *   `<= x`: the tenant is then caught up to max(head read before the feed, last applied snap).
 * - Writes of this process: inner.write, then a catch-up to the write's snap before returning (read-your-writes).
 * - Writes of other processes: a periodic refresh (`refreshMs`) polls the inner head (one cheap statement) and
 *   catches every tenant up when it moved; it also notices tenants created/deleted elsewhere and the GC horizon.
 * - A read at a snap newer than the tenant's caught-up snap (a snap token from another instance) catches up first
 *   (asynchronously) and never answers from a stale copy.
 * - GC: the inner store collects; the replica caches the horizon (expired snaps are refused without SQL) and
 *   collects the memory copy up to at most the same horizon.
 * - Size guard: when the initial load passes `maxRows` rows, the load is abandoned and `open` returns the inner
 *   store itself (reads go to SQL), with a log line saying so.
 *
 * Runtimes where I/O may only happen inside a request (Cloudflare Workers: no background timers) use
 * `ReplicaStore.lazy` instead of `open`: no timer, and
 * - each tenant is loaded on first use (once per isolate), unless its rows would take the replica above
 *   `maxRows`: such a tenant is never loaded and its reads go to the inner store (batched SQL);
 * - freshness is request-driven: reading a loaded tenant's head snap (once per check) costs no statement while the
 *   tenant's last look at the database is younger than `freshnessMs`, else ONE statement (head snap, GC horizon
 *   and the tenant's created_at together), plus a catch-up from the change feed only when the head moved.
 */
import { PembaError } from "../../../errors.ts";
import type { Attribute, Tuple } from "../../../model.ts";
import { MemoryStore } from "../../memory/memory-store.ts";
import type {
  AttributeQuery,
  ChangeSet,
  DataChange,
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

/** The pino-compatible subset the replica logs through. */
export interface ReplicaLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ReplicaOptions {
  /** How often the inner head is polled for writes of other processes, in ms (default 1000; 0 = never). */
  refreshMs?: number;
  /** Above this many rows (tuples + attributes) at open, run without the replica (default 5,000,000). */
  maxRows?: number;
  /** Rows per page of the initial load (default 10,000). */
  loadPageSize?: number;
  /** Change sets per feed read (default 1,000). */
  feedBatch?: number;
  logger?: ReplicaLogger;
}

export interface LazyReplicaOptions extends Omit<ReplicaOptions, "refreshMs"> {
  /** A read of the head snap looks for writes of other instances when the last look is older than this (ms). */
  freshnessMs?: number;
}

export const DEFAULT_REPLICA_REFRESH_MS = 1000;
export const DEFAULT_REPLICA_MAX_ROWS = 5_000_000;

/** What the replica needs from its inner store beyond `Store`: the GC horizon (SqlStore has it). */
interface HorizonSource {
  gcHorizon(): MaybePromise<Snap>;
}

const hasHorizon = (s: Store): s is Store & HorizonSource =>
  typeof (s as Partial<HorizonSource>).gcHorizon === "function";

/** The database's state as one statement reads it (SqlStore.freshness). */
export interface Freshness {
  head: Snap;
  horizon: Snap;
  /** The tenant's created_at (ms); undefined when the tenant does not exist. */
  tenantCreatedAt: number | undefined;
  /** The tenant's head schema version at `head`, when the store reads it in the same statement. */
  headSchemaVersion?: string;
}

interface FreshnessSource {
  freshness(tenantId: string): MaybePromise<Freshness>;
}

const hasFreshness = (s: Store): s is Store & FreshnessSource =>
  typeof (s as Partial<FreshnessSource>).freshness === "function";

interface TenantState {
  id: string;
  /** The tenant's created_at (ms): a different value on refresh = deleted and re-created elsewhere. */
  createdAt: number;
  /** The memory copy is exact for snaps >= floor. */
  floor: Snap;
  /** Every change of the tenant with snap <= caughtUp is applied. */
  caughtUp: Snap;
  /** The last snap applied to the memory copy (>= caughtUp only while a catch-up runs). */
  applied: Snap;
  /** The catch-up in flight, if any (one at a time per tenant). */
  busy?: Promise<void>;
  /** Rows of this tenant in the copy (loaded plus created minus deleted since). */
  rows: number;
  /** Date.now() of the tenant's last look at the database head (request-driven freshness). */
  checkedAt: number;
}

class TooLarge extends Error {}

const expired = () => new PembaError("ERROR_CODE_SNAP_TOKEN_EXPIRED");

export interface ReplicaStats {
  tenants: number;
  /** Rows loaded at open plus rows created since, minus rows deleted since (approximate live count). */
  rows: number;
  loadMs: number;
}

export class ReplicaStore extends ForwardingStore {
  private readonly memory = new MemoryStore();
  private readonly states = new Map<string, TenantState>();
  private readonly loading = new Map<string, Promise<TenantState | undefined>>();
  private readonly refreshMs: number;
  /** Request-driven freshness window (lazy replicas); undefined = the refresh timer keeps the copy fresh. */
  private readonly freshnessMs?: number;
  private readonly headSchemaListeners: HeadSchemaListener[] = [];
  /** Tenants too large for the copy (lazy replicas): served by the inner store. */
  private readonly oversized = new Set<string>();
  private readonly maxRows: number;
  private readonly pageSize: number;
  private readonly feedBatch: number;
  private readonly logger?: ReplicaLogger;
  /** The inner store reports its GC horizon, so expired snaps are known without asking it per read. */
  private readonly horizonKnown: boolean;
  /** The inner GC horizon as last seen; snaps below it are expired. */
  private horizon = 0;
  /** (snap, Date.now() before applying) of every change set applied, in apply order: for mirroring GC. */
  private rows = 0;
  private loadMs = 0;
  private guarding = true;
  private warnedSize = false;
  private timer?: ReturnType<typeof setInterval>;
  private refreshing?: Promise<void>;
  private closed = false;

  private constructor(inner: Store, opts: ReplicaOptions, freshnessMs?: number) {
    super(inner);
    this.freshnessMs = freshnessMs;
    this.refreshMs = opts.refreshMs ?? DEFAULT_REPLICA_REFRESH_MS;
    this.maxRows = opts.maxRows ?? DEFAULT_REPLICA_MAX_ROWS;
    this.pageSize = opts.loadPageSize ?? 10_000;
    this.feedBatch = opts.feedBatch ?? 1000;
    this.logger = opts.logger;
    this.horizonKnown = hasHorizon(inner);
  }

  /**
   * Loads every tenant of `inner` into memory and starts the refresh timer. Returns the inner store itself
   * (no replica) when it holds more than `maxRows` rows.
   */
  static async open(inner: Store, opts: ReplicaOptions = {}): Promise<Store> {
    const replica = new ReplicaStore(inner, opts);
    const started = performance.now();
    try {
      await replica.syncHorizon();
      let cursor: string | undefined;
      do {
        const page = await inner.listTenants(100, cursor);
        for (const t of page.items) await replica.ensure(t.id, t);
        cursor = page.cursor || undefined;
      } while (cursor);
    } catch (e) {
      if (!(e instanceof TooLarge)) throw e;
      opts.logger?.warn(
        { store: inner.kind, maxRows: replica.maxRows },
        `replica disabled: the database holds more than ${replica.maxRows} rows (--replica-max-rows); reads go to SQL`,
      );
      return inner;
    }
    replica.guarding = false;
    replica.loadMs = performance.now() - started;
    opts.logger?.info(
      { store: inner.kind, tenants: replica.states.size, rows: replica.rows, ms: Math.round(replica.loadMs) },
      `replica loaded ${replica.rows} rows of ${replica.states.size} tenant(s) in ${Math.round(replica.loadMs)} ms`,
    );
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
  static lazy(inner: Store, opts: LazyReplicaOptions = {}): ReplicaStore {
    const replica = new ReplicaStore(
      inner,
      { ...opts, refreshMs: 0 },
      opts.freshnessMs ?? DEFAULT_REPLICA_REFRESH_MS,
    );
    return replica;
  }

  /**
   * Lazy replicas: `listener` hears the head schema version each look at the database read (with the snap of that
   * read), so the schema registry keeps its cached head fresh without statements of its own.
   */
  onHeadSchema(listener: HeadSchemaListener): void {
    this.headSchemaListeners.push(listener);
  }

  /** Whether the tenant's reads are answered from memory (loaded) rather than by the inner store. */
  holds(tenantId: string): boolean {
    return this.states.has(tenantId);
  }

  stats(): ReplicaStats {
    return { tenants: this.states.size, rows: this.rows, loadMs: this.loadMs };
  }

  // ---- loading and catching up ----

  /**
   * The tenant's state, loading it on first use; undefined when the inner store has no such tenant or (lazy
   * replicas) the tenant is too large for the copy.
   */
  private ensure(id: string, known?: Tenant): MaybePromise<TenantState | undefined> {
    const st = this.states.get(id);
    if (st !== undefined) return st;
    if (this.oversized.has(id)) return undefined;
    let pending = this.loading.get(id);
    if (pending === undefined) {
      pending = (
        this.freshnessMs === undefined ? this.load(id, known) : this.loadWithinCap(id, known)
      ).finally(() => this.loading.delete(id));
      this.loading.set(id, pending);
    }
    return pending;
  }

  private countRows(n: number): void {
    this.rows += n;
    if (this.rows <= this.maxRows) return;
    if (this.guarding) throw new TooLarge();
    if (!this.warnedSize) {
      this.warnedSize = true;
      this.logger?.warn(
        { rows: this.rows, maxRows: this.maxRows },
        "replica holds more rows than --replica-max-rows (it grew after start); memory use grows with it",
      );
    }
  }

  /** A lazy replica's load: a tenant that does not fit under `maxRows` is left to the inner store. */
  private async loadWithinCap(id: string, known?: Tenant): Promise<TenantState | undefined> {
    try {
      return await this.load(id, known);
    } catch (e) {
      if (!(e instanceof TooLarge)) throw e;
      this.markOversized(id);
      return undefined;
    }
  }

  private markOversized(id: string): void {
    this.oversized.add(id);
    this.logger?.warn(
      { tenant: id, rows: this.rows, maxRows: this.maxRows },
      `replica: tenant ${id} does not fit under ${this.maxRows} rows (PEMBA_REPLICA_MAX_ROWS); its reads go to SQL`,
    );
  }

  /**
   * Loads the tenant's live rows at the current head `h`. Each page is applied as its own change set (so the load
   * never holds more than one page of garbage): pages take snaps 1, 2, ... below `h` and the last one (or all the
   * rest, when `h` is small) takes `h`. Reads below `floor` = `h` never reach memory, so only "created <= h"
   * matters for those rows.
   */
  private async load(id: string, known?: Tenant): Promise<TenantState | undefined> {
    for (let attempt = 0; ; attempt++) {
      const tenant = known ?? (await this.inner.getTenant(id));
      if (tenant === undefined) return undefined;
      const head = await this.inner.headSnap(id);
      await this.memory.deleteTenant(id);
      let pending: DataChange[] = [];
      let nextSnap = 1;
      let count = 0;
      const take = (changes: DataChange[]) => {
        count += changes.length;
        try {
          this.countRows(changes.length);
        } catch (e) {
          this.rows -= count;
          void this.memory.deleteTenant(id);
          throw e;
        }
        pending = pending.length === 0 ? changes : pending.concat(changes);
        if (nextSnap < head) {
          this.apply(id, { snap: nextSnap++, changes: pending });
          pending = [];
        }
      };
      let cursor: string | undefined;
      do {
        const page = await this.inner.readTuples(id, head, {}, this.pageSize, cursor);
        take(page.items.map((tuple): DataChange => ({ operation: "OPERATION_CREATE", tuple })));
        cursor = page.cursor || undefined;
      } while (cursor);
      do {
        const page = await this.inner.readAttributes(id, head, {}, this.pageSize, cursor);
        take(page.items.map((attribute): DataChange => ({ operation: "OPERATION_CREATE", attribute })));
        cursor = page.cursor || undefined;
      } while (cursor);
      if (pending.length > 0) this.apply(id, { snap: head, changes: pending });
      // a GC past `head` during the paged reads may have removed rows visible at `head`: read again
      const horizon = await this.readHorizon();
      if (horizon > head && attempt < 5) {
        this.rows -= count;
        known = undefined;
        continue;
      }
      const st: TenantState = {
        id,
        createdAt: tenant.createdAt.getTime(),
        floor: head,
        caughtUp: head,
        applied: head,
        rows: count,
        checkedAt: Date.now(),
      };
      this.states.set(id, st);
      return st;
    }
  }

  private apply(id: string, set: ChangeSet): void {
    this.memory.applyChangeSet(id, set);
  }

  /** Brings the tenant up to at least `target` (or the inner head when no trusted target is given). */
  private async catchUp(st: TenantState, target: Snap | undefined, trusted: boolean): Promise<void> {
    while (st.busy !== undefined) await st.busy.catch(() => {});
    if (this.states.get(st.id) !== st) return; // dropped or reloaded meanwhile
    if (target !== undefined && st.caughtUp >= target) return;
    const run = this.pull(st, trusted ? target : undefined);
    st.busy = run;
    try {
      await run;
    } finally {
      if (st.busy === run) st.busy = undefined;
    }
  }

  private async pull(st: TenantState, trustedHead: Snap | undefined): Promise<void> {
    const head = trustedHead ?? (await this.inner.headSnap(st.id));
    const from = Math.max(st.caughtUp, st.applied);
    let after = from;
    let created = 0;
    for (;;) {
      const sets = await this.inner.changes(st.id, after, this.feedBatch);
      if (this.states.get(st.id) !== st) return;
      for (const set of sets) {
        this.apply(st.id, set);
        st.applied = set.snap;
        after = set.snap;
        for (const c of set.changes) created += c.operation === "OPERATION_CREATE" ? 1 : -1;
      }
      if (sets.length < this.feedBatch) break;
    }
    st.rows += created;
    if (this.freshnessMs !== undefined && this.rows + created > this.maxRows) {
      // a lazy replica gives a tenant that outgrew the cap back to the inner store (its memory is freed)
      this.rows += created;
      this.drop(st.id);
      this.markOversized(st.id);
      return;
    }
    this.countRows(created);
    // the feed skips transactions at or before the GC horizon: if the horizon passed the snap we started from,
    // changes may have been skipped, so reload the tenant from scratch
    if ((await this.readHorizon()) > from) {
      this.logger?.warn({ tenant: st.id }, "replica fell behind the GC horizon; reloading the tenant");
      await this.reload(st);
      return;
    }
    st.caughtUp = Math.max(st.caughtUp, head, after);
  }

  private async reload(st: TenantState): Promise<void> {
    this.drop(st.id);
    await this.ensure(st.id);
  }

  private drop(id: string): void {
    const st = this.states.get(id);
    if (st === undefined) return;
    this.states.delete(id);
    this.rows -= st.rows;
    void this.memory.deleteTenant(id);
  }

  /** Reads the inner GC horizon; mirrors a GC into the memory copy when it moved. */
  private async readHorizon(): Promise<Snap> {
    if (!hasHorizon(this.inner)) return this.horizon;
    const h = await this.inner.gcHorizon();
    if (h > this.horizon) {
      this.horizon = h;
      await this.mirrorGc(h);
    }
    return h;
  }

  private async syncHorizon(): Promise<void> {
    await this.readHorizon();
  }

  /** Mirrors the inner store's GC horizon `h` exactly (by snap, so no clock is involved). */
  private async mirrorGc(h: Snap): Promise<void> {
    this.memory.collectUpTo(h);
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
      const seen = new Map<string, Tenant>();
      let cursor: string | undefined;
      do {
        const page = await this.inner.listTenants(1000, cursor);
        for (const t of page.items) seen.set(t.id, t);
        cursor = page.cursor || undefined;
      } while (cursor);
      for (const [id, st] of this.states) {
        const t = seen.get(id);
        if (t === undefined || t.createdAt.getTime() !== st.createdAt) this.drop(id);
      }
      const head = await this.inner.headSnap("");
      await this.readHorizon();
      for (const t of seen.values()) {
        const st = await this.ensure(t.id, t);
        if (st !== undefined && st.caughtUp < head) await this.catchUp(st, head, true);
      }
    } catch (e) {
      this.logger?.warn({ err: e }, "replica refresh failed; retrying at the next interval");
    }
  }

  /**
   * A lazy replica's look at the database (one statement with SqlStore): catches the tenant up when the head moved,
   * mirrors a GC, drops a tenant deleted (or re-created) elsewhere. Requests meanwhile use the current copy.
   */
  private async freshen(st: TenantState): Promise<Snap> {
    st.checkedAt = Date.now();
    const f = await this.readFreshness(st.id);
    if (f.headSchemaVersion !== undefined) {
      for (const listener of this.headSchemaListeners) listener(st.id, f.headSchemaVersion, f.head);
    }
    if (f.horizon > this.horizon) {
      this.horizon = f.horizon;
      await this.mirrorGc(f.horizon);
    }
    if (this.states.get(st.id) === st && f.tenantCreatedAt !== st.createdAt) this.drop(st.id);
    else if (f.head > st.caughtUp) await this.catchUp(st, f.head, true);
    return this.states.get(st.id) === st ? st.caughtUp : await this.headSnap(st.id);
  }

  private async readFreshness(tenantId: string): Promise<Freshness> {
    if (hasFreshness(this.inner)) return await this.inner.freshness(tenantId);
    const head = await this.inner.headSnap(tenantId);
    const horizon = hasHorizon(this.inner) ? await this.inner.gcHorizon() : this.horizon;
    const tenant = await this.inner.getTenant(tenantId);
    return { head, horizon, tenantCreatedAt: tenant?.createdAt.getTime() };
  }

  // ---- reads answered from memory ----

  private async slow<T>(
    tenantId: string,
    snap: Snap,
    fromMemory: () => T,
    fromInner: () => MaybePromise<T>,
  ): Promise<T> {
    for (;;) {
      const st = await this.ensure(tenantId);
      if (st === undefined || snap < st.floor) return await fromInner();
      if (snap > st.caughtUp) await this.catchUp(st, snap, false);
      if (this.states.get(tenantId) === st) return fromMemory();
    }
  }

  override headSnap(tenantId: string): MaybePromise<Snap> {
    const st = this.states.get(tenantId);
    if (st !== undefined) {
      const window = this.freshnessMs;
      if (window === undefined || Date.now() - st.checkedAt < window) return st.caughtUp;
      return this.freshen(st);
    }
    if (this.oversized.has(tenantId)) return this.inner.headSnap(tenantId);
    return (async () => {
      const loaded = await this.ensure(tenantId);
      return loaded !== undefined ? loaded.caughtUp : await this.inner.headSnap(tenantId);
    })();
  }

  override assertSnapReadable(tenantId: string, snap: Snap): MaybePromise<void> {
    if (snap < this.horizon) throw expired();
    const st = this.states.get(tenantId);
    if (st !== undefined && snap >= st.floor && this.horizonKnown) return;
    return this.inner.assertSnapReadable(tenantId, snap);
  }

  override queryTuples(tenantId: string, snap: Snap, queries: TupleQuery[]): MaybePromise<Tuple[]> {
    const st = this.states.get(tenantId);
    if (st !== undefined && snap <= st.caughtUp && snap >= st.floor)
      return this.memory.queryTuples(tenantId, snap, queries);
    return this.slow(
      tenantId,
      snap,
      () => this.memory.queryTuples(tenantId, snap, queries),
      () => this.inner.queryTuples(tenantId, snap, queries),
    );
  }

  override querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
  ): MaybePromise<Tuple[]> {
    const st = this.states.get(tenantId);
    if (st !== undefined && snap <= st.caughtUp && snap >= st.floor)
      return this.memory.querySubjectTuples(tenantId, snap, queries);
    return this.slow(
      tenantId,
      snap,
      () => this.memory.querySubjectTuples(tenantId, snap, queries),
      () => this.inner.querySubjectTuples(tenantId, snap, queries),
    );
  }

  override queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
  ): MaybePromise<Attribute[]> {
    const st = this.states.get(tenantId);
    if (st !== undefined && snap <= st.caughtUp && snap >= st.floor)
      return this.memory.queryAttributes(tenantId, snap, queries);
    return this.slow(
      tenantId,
      snap,
      () => this.memory.queryAttributes(tenantId, snap, queries),
      () => this.inner.queryAttributes(tenantId, snap, queries),
    );
  }

  override queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
  ): MaybePromise<[Tuple[], Attribute[]]> {
    const fromMemory = (): [Tuple[], Attribute[]] => [
      this.memory.queryTuples(tenantId, snap, tuples),
      this.memory.queryAttributes(tenantId, snap, attributes),
    ];
    const st = this.states.get(tenantId);
    if (st !== undefined && snap <= st.caughtUp && snap >= st.floor) return fromMemory();
    return this.slow(tenantId, snap, fromMemory, () =>
      super.queryTuplesAndAttributes(tenantId, snap, tuples, attributes),
    );
  }

  override listObjectIds(tenantId: string, snap: Snap, type: string): MaybePromise<string[]> {
    const st = this.states.get(tenantId);
    if (st !== undefined && snap <= st.caughtUp && snap >= st.floor)
      return this.memory.listObjectIds(tenantId, snap, type);
    return this.slow(
      tenantId,
      snap,
      () => this.memory.listObjectIds(tenantId, snap, type),
      () => this.inner.listObjectIds(tenantId, snap, type),
    );
  }

  // ---- writes ----

  override async write(tenantId: string, req: WriteRequest): Promise<Snap> {
    const snap = await this.inner.write(tenantId, req);
    try {
      const st = await this.ensure(tenantId);
      if (st !== undefined) await this.catchUp(st, snap, true);
    } catch (e) {
      // the write is committed; reads at its snap catch up on their own
      this.logger?.warn({ err: e, tenant: tenantId }, "replica catch-up after a write failed");
    }
    return snap;
  }

  override async gc(olderThan: Date): Promise<number> {
    const removed = await this.inner.gc(olderThan);
    await this.syncHorizon();
    return removed;
  }

  // ---- tenants ----

  override async createTenant(id: string, name: string): Promise<Tenant> {
    const tenant = await this.inner.createTenant(id, name);
    this.drop(id);
    await this.ensure(id, tenant);
    return tenant;
  }

  override async deleteTenant(id: string): Promise<Tenant | undefined> {
    const deleted = await this.inner.deleteTenant(id);
    this.drop(id);
    return deleted;
  }

  // everything else (schemas, paged reads whose cursors are the inner store's, the feed, bundles, D1 bookmarks)
  // is the inner store's: ForwardingStore

  override async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.refreshing;
    await this.inner.close();
  }
}
