/**
 * The replica's memory copy and how it is kept exact (see routing.ts for what answers from it):
 *
 * - Load: a tenant is loaded from its live rows at the store head `h` (paged readTuples/readAttributes at `h`,
 *   each page applied as a change set at a snap <= `h`). Replaying the change feed from 0 would not do: after a GC
 *   the feed skips every transaction at or before the GC horizon, so rows created before the horizon and still live
 *   would be missing. The copy is exact for snaps >= `floor` (= `h`).
 * - Catch-up: the tenant's change feed after its caught-up snap, applied with `ChangeSetSink.applyChangeSet`.
 *   Transaction ids are assigned in commit order by every SQL driver (the id counter row is updated first in each
 *   write transaction and stays locked until commit), so a feed read that sees snap `x` has every change `<= x`:
 *   the tenant is then caught up to max(head read before the feed, last applied snap).
 * - Writes of other processes: `refreshAll` (a timer's round) polls the inner head and catches every tenant up
 *   when it moved; it also notices tenants created/deleted elsewhere and the GC horizon. Lazy replicas instead
 *   `freshen` a tenant on a read of its head snap (one statement with a FreshnessSource).
 * - GC: the source collects; the copy caches the horizon (expired snaps are refused without SQL) and collects up to
 *   at most the same horizon.
 * - Size guard: rows above `maxRows` during the first load abandon it (`loadAll` answers false); a lazy replica
 *   leaves a tenant that does not fit to the source instead.
 */
import type { ChangeSetSink, Freshness, FreshnessSource, NearestReplica } from "../../capabilities.ts";
import { hasFreshness, hasTenantHeads, type TenantHeads } from "../../capabilities.ts";
import { MemoryStore } from "../../memory/memory-store.ts";
import type { ChangeSet, DataChange, HeadSchemaListener, Snap, Store, Tenant } from "../../store.ts";
import type { MaybePromise } from "../../types.ts";

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
  /**
   * Estimated bytes (rowBytes) the copy holds at most: loading or growing a tenant past it first evicts the least
   * recently used other tenants (their reads load them again); a tenant that does not fit alone is left to the inner
   * store. Default: no byte cap.
   */
  maxBytes?: number;
  /** A read of the head snap looks for writes of other instances when the last look is older than this (ms). */
  freshnessMs?: number;
  /**
   * Load tenants in the background: a tenant's reads go to the inner store (one statement per walk level) until its
   * copy is loaded, so no request waits for a whole tenant. The replica hands each load's `start` to this function,
   * which runs it when it suits the runtime and keeps it alive (the Worker: once the response that asked for it is
   * ready, under its `ctx.waitUntil`, so the load's CPU never delays that response). Without it, the first request
   * waits for the load.
   */
  background?: BackgroundLoads;
  /**
   * The caps' counters, shared with the replicas of the isolate's other databases (the Worker's D1 bindings), so
   * `maxRows` and `maxBytes` hold for the isolate and eviction picks the least recently used tenant of any of them.
   * Default: this replica's own.
   */
  budget?: CopyBudget;
}

/**
 * The rows, estimated bytes and use clock of the copies that share the caps (one copy per database): each
 * TenantCopies counts into its budget, and evicts from every member.
 */
export class CopyBudget {
  rows = 0;
  bytes = 0;
  clock = 0;
  readonly members: TenantCopies[] = [];
}

/** Bytes per row of the copy besides its ids' text (columns, indexes, map entries). */
const ROW_BYTES = 32;

/**
 * A row's estimated bytes in the copy: ROW_BYTES plus its ids as UTF-16 text (type, relation and attribute names are
 * interned once per tenant). Calibrated on loadtest/replica-memory.ts (40-54 bytes per row held for Permify's data,
 * ids of 1-5 digits): the estimate there is 34-52, i.e. it errs high for large tenants, where bytes matter.
 */
export function rowBytes(change: DataChange): number {
  const t = change.tuple;
  if (t !== undefined) return ROW_BYTES + 2 * (t.entity.id.length + t.subject.id.length);
  const a = change.attribute;
  if (a === undefined) return ROW_BYTES;
  const data = (a.value as { data?: unknown }).data;
  return ROW_BYTES + 2 * (a.entity.id.length + (typeof data === "string" ? data.length : 4));
}

/** Runs a tenant load later (see LazyReplicaOptions.background); `start` never rejects. */
export type BackgroundLoads = (start: () => Promise<unknown>) => void;

export const DEFAULT_REPLICA_REFRESH_MS = 1000;
/**
 * Rows per page of a background load: the isolate's one thread turns each page into the copy in one go, and the
 * requests answered meanwhile wait for that slice (10,000 rows took ~0.2 s of workerd CPU; 2,000 keep the slice
 * short at 400 reads for 800,000 rows, under D1's 1,000 queries per invocation).
 */
export const BACKGROUND_LOAD_PAGE_SIZE = 2000;
export const DEFAULT_REPLICA_MAX_ROWS = 5_000_000;

/**
 * What the copy reads from the store behind it: tenants and pages of rows (the load), the head and the change feed
 * (catch-up), and, when the store has it, one cheap look at its head and GC horizon.
 */
export type ReplicaSource = Pick<
  Store,
  "listTenants" | "getTenant" | "headSnap" | "readTuples" | "readAttributes" | "changes"
> &
  Partial<FreshnessSource> &
  Partial<TenantHeads> &
  Partial<NearestReplica>;

/** Change sets a write read after `from` in its own transaction, and the GC horizon read after them (WriteFeed). */
export interface WriteFeedRead {
  from: Snap;
  sets: ChangeSet[];
  horizon: Snap;
}

export interface TenantState {
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
  /** Estimated bytes of this tenant in the copy (rowBytes of its rows). */
  bytes: number;
  /** When it was last read (TenantCopies' use clock): the least recently used tenant is evicted first. */
  usedAt: number;
}

class TooLarge extends Error {
  readonly limit: "rows" | "bytes";
  constructor(limit: "rows" | "bytes") {
    super(limit);
    this.limit = limit;
  }
}

export class TenantCopies {
  readonly memory = new MemoryStore();
  private readonly sink: ChangeSetSink = this.memory;
  private readonly states = new Map<string, TenantState>();
  private readonly loading = new Map<string, Promise<TenantState | undefined>>();
  /** Tenants whose background load is handed to the runtime and not started yet. */
  private readonly queued = new Set<string>();
  /** Tenants written by this instance while their load ran: their copy looks at the head at its first read. */
  private readonly writtenWhileLoading = new Set<string>();
  private readonly source: ReplicaSource;
  /** Request-driven freshness window (lazy replicas); undefined = a refresh timer keeps the copy fresh. */
  readonly freshnessMs?: number;
  private readonly headSchemaListeners: HeadSchemaListener[] = [];
  /** Tenants too large for the copy (lazy replicas): served by the source. */
  private readonly oversized = new Set<string>();
  readonly maxRows: number;
  private readonly pageSize: number;
  private readonly feedBatch: number;
  private readonly logger?: ReplicaLogger;
  /** The source reports its GC horizon, so expired snaps are known without asking it per read. */
  readonly horizonKnown: boolean;
  /** The source's GC horizon as last seen; snaps below it are expired. */
  horizon = 0;
  /** Counters shared with the copies of other databases (LazyReplicaOptions.budget), else this copy's own. */
  private readonly budget: CopyBudget;
  readonly maxBytes: number;
  private guarding = true;
  private warnedSize = false;

  constructor(source: ReplicaSource, opts: ReplicaOptions, freshnessMs?: number) {
    this.source = source;
    this.freshnessMs = freshnessMs;
    this.maxRows = opts.maxRows ?? DEFAULT_REPLICA_MAX_ROWS;
    this.maxBytes = (opts as LazyReplicaOptions).maxBytes ?? Number.POSITIVE_INFINITY;
    this.pageSize = opts.loadPageSize ?? 10_000;
    this.feedBatch = opts.feedBatch ?? 1000;
    this.logger = opts.logger;
    this.horizonKnown = hasFreshness(source);
    this.budget = (opts as LazyReplicaOptions).budget ?? new CopyBudget();
    this.budget.members.push(this);
  }

  /** Rows in the copy, all tenants (of every copy sharing the budget). */
  get rows(): number {
    return this.budget.rows;
  }
  set rows(n: number) {
    this.budget.rows = n;
  }

  /** Estimated bytes of the copy, all tenants (of every copy sharing the budget). */
  get bytes(): number {
    return this.budget.bytes;
  }
  set bytes(n: number) {
    this.budget.bytes = n;
  }

  /** The use clock: one tick per read of a tenant's head. */
  private get clock(): number {
    return this.budget.clock;
  }
  private set clock(n: number) {
    this.budget.clock = n;
  }

  onHeadSchema(listener: HeadSchemaListener): void {
    this.headSchemaListeners.push(listener);
  }

  /** The tenant's state when it is loaded (no I/O). */
  state(id: string): TenantState | undefined {
    return this.states.get(id);
  }

  /** Marks the tenant as just used (least recently used tenants are evicted first). */
  touch(st: TenantState): void {
    st.usedAt = ++this.clock;
  }

  get tenants(): number {
    return this.states.size;
  }

  isOversized(id: string): boolean {
    return this.oversized.has(id);
  }

  /**
   * Background loading (lazy replicas with `background`): the tenant's state when loaded, else undefined after
   * handing its load to `background` (unless one is queued or runs, or the tenant is too large); never waits. A
   * failed load is logged and retried by a later read.
   */
  loadLater(id: string, background: BackgroundLoads): TenantState | undefined {
    const st = this.states.get(id);
    if (st !== undefined || this.oversized.has(id) || this.loading.has(id) || this.queued.has(id)) return st;
    this.queued.add(id);
    background(async () => {
      this.queued.delete(id);
      try {
        await this.ensure(id);
      } catch (e) {
        this.logger?.warn({ err: e, tenant: id }, "replica: loading the tenant failed");
      }
    });
    return undefined;
  }

  /**
   * A write of this instance to a tenant whose (background) load runs: the load read an older head, so the copy's
   * first read looks at the database (and catches up to the write) instead of trusting its freshness window.
   */
  notWaitedWrite(id: string): void {
    if (this.loading.has(id) || this.queued.has(id)) this.writtenWhileLoading.add(id);
  }

  /** Loads every tenant of the source; false when they hold more than `maxRows` rows (nothing is kept then). */
  async loadAll(): Promise<boolean> {
    try {
      await this.readHorizon();
      let cursor: string | undefined;
      do {
        const page = await this.source.listTenants(100, cursor);
        for (const t of page.items) await this.ensure(t.id, t);
        cursor = page.cursor || undefined;
      } while (cursor);
    } catch (e) {
      if (!(e instanceof TooLarge)) throw e;
      return false;
    }
    this.guarding = false;
    return true;
  }

  /**
   * The tenant's state, loading it on first use; undefined when the source has no such tenant or (lazy replicas)
   * the tenant is too large for the copy.
   */
  ensure(id: string, known?: Tenant): MaybePromise<TenantState | undefined> {
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
    if (this.guarding) throw new TooLarge("rows");
    if (!this.warnedSize) {
      this.warnedSize = true;
      this.logger?.warn(
        { rows: this.rows, maxRows: this.maxRows },
        "replica holds more rows than --replica-max-rows (it grew after start); memory use grows with it",
      );
    }
  }

  /**
   * Makes room for tenant `id`, whose `own` bytes so far are counted in `this.bytes`: TooLarge when it alone is above
   * `maxBytes` (no other tenant is evicted for it); else evicts the least recently used other tenants while the copy
   * is above `maxBytes`.
   */
  private reserveBytes(id: string, own: number): void {
    if (own > this.maxBytes) throw new TooLarge("bytes");
    if (this.bytes <= this.maxBytes) return;
    this.evictFor(id);
    if (this.bytes > this.maxBytes) throw new TooLarge("bytes");
  }

  /**
   * Evicts loaded tenants other than `id`, least recently used first (of every copy sharing the budget), until the
   * copies fit under `maxBytes`.
   */
  private evictFor(id: string): void {
    while (this.bytes > this.maxBytes) {
      let victim: TenantState | undefined;
      let owner: TenantCopies = this;
      for (const copies of this.budget.members) {
        for (const st of copies.states.values()) {
          if (copies === this && st.id === id) continue;
          if (victim === undefined || st.usedAt < victim.usedAt) {
            victim = st;
            owner = copies;
          }
        }
      }
      if (victim === undefined) return;
      this.logger?.info(
        { tenant: victim.id, bytes: victim.bytes, for: id, maxBytes: this.maxBytes },
        `replica: evicted tenant ${victim.id} (least recently used) to make room for ${id}`,
      );
      owner.drop(victim.id);
    }
  }

  /** A lazy replica's load: a tenant that does not fit under `maxRows` is left to the source. */
  private async loadWithinCap(id: string, known?: Tenant): Promise<TenantState | undefined> {
    try {
      return await this.load(id, known);
    } catch (e) {
      if (!(e instanceof TooLarge)) throw e;
      this.markOversized(id, e.limit);
      return undefined;
    }
  }

  private markOversized(id: string, limit: "rows" | "bytes"): void {
    this.oversized.add(id);
    this.logger?.warn(
      { tenant: id, rows: this.rows, maxRows: this.maxRows, maxBytes: this.maxBytes },
      limit === "rows"
        ? `replica: tenant ${id} does not fit under ${this.maxRows} rows (PEMBA_REPLICA_MAX_ROWS); its reads go to SQL`
        : `replica: tenant ${id} does not fit in ${+(this.maxBytes / 1048576).toFixed(2)} MB (PEMBA_REPLICA_MAX_MB); its reads go to SQL`,
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
      const tenant = known ?? (await this.source.getTenant(id));
      if (tenant === undefined) return undefined;
      // the copy's look at the database is its head's read: writes elsewhere during the load are seen at the next
      const lookedAt = Date.now();
      const head = await this.source.headSnap(id);
      await this.sink.deleteTenant(id);
      let pending: DataChange[] = [];
      let nextSnap = 1;
      let count = 0;
      let byteCount = 0;
      const take = (changes: DataChange[]) => {
        count += changes.length;
        let bytes = 0;
        for (const c of changes) bytes += rowBytes(c);
        byteCount += bytes;
        this.bytes += bytes;
        try {
          this.countRows(changes.length);
          this.reserveBytes(id, byteCount);
        } catch (e) {
          this.rows -= count;
          this.bytes -= byteCount;
          void this.sink.deleteTenant(id);
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
        // at 0: every row, expired or not (reads filter by their own evaluation time)
        const page = await this.source.readTuples(id, head, {}, this.pageSize, cursor, 0);
        take(page.items.map((tuple): DataChange => ({ operation: "OPERATION_CREATE", tuple })));
        cursor = page.cursor || undefined;
      } while (cursor);
      do {
        const page = await this.source.readAttributes(id, head, {}, this.pageSize, cursor, 0);
        take(page.items.map((attribute): DataChange => ({ operation: "OPERATION_CREATE", attribute })));
        cursor = page.cursor || undefined;
      } while (cursor);
      if (pending.length > 0) this.apply(id, { snap: head, changes: pending });
      // a GC past `head` during the paged reads may have removed rows visible at `head`: read again
      const horizon = await this.readHorizon();
      if (horizon > head && attempt < 5) {
        this.rows -= count;
        this.bytes -= byteCount;
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
        checkedAt: this.writtenWhileLoading.delete(id) ? 0 : lookedAt,
        bytes: byteCount,
        usedAt: ++this.clock,
      };
      this.states.set(id, st);
      return st;
    }
  }

  private apply(id: string, set: ChangeSet): void {
    this.sink.applyChangeSet(id, set);
  }

  /** Brings the tenant up to at least `target` (or the source head when no trusted target is given). */
  async catchUp(
    st: TenantState,
    target: Snap | undefined,
    trusted: boolean,
    read?: WriteFeedRead,
  ): Promise<void> {
    await this.serially(st, async () => {
      if (target !== undefined && st.caughtUp >= target) return;
      await this.pull(st, trusted ? target : undefined, read);
    });
  }

  /**
   * Runs `work` on the tenant's copy once no other catch-up of it is running, unless the tenant was dropped or
   * reloaded meanwhile; the catch-ups of one tenant never overlap.
   */
  private async serially(st: TenantState, work: () => Promise<void>): Promise<void> {
    while (st.busy !== undefined) await st.busy.catch(() => {});
    if (this.states.get(st.id) !== st) return; // dropped or reloaded meanwhile
    const run = work();
    st.busy = run;
    try {
      await run;
    } finally {
      if (st.busy === run) st.busy = undefined;
    }
  }

  /**
   * The feed skips transactions at or before the GC horizon: if the horizon passed the snap a catch-up read the
   * feed from, changes may have been skipped, so the tenant is reloaded from scratch (true).
   */
  private async reloadIfBehind(st: TenantState, horizon: Snap, from: Snap): Promise<boolean> {
    if (horizon <= from) return false;
    this.logger?.warn({ tenant: st.id }, "replica fell behind the GC horizon; reloading the tenant");
    await this.reload(st);
    return true;
  }

  /**
   * Applies the feed after the copy's last applied snap: read here, or (`read`) first the sets a write read in its
   * own transaction, which may begin at or before what a catch-up applied meanwhile (those are skipped).
   */
  private async pull(st: TenantState, trustedHead: Snap | undefined, read?: WriteFeedRead): Promise<void> {
    const head = trustedHead ?? (await this.source.headSnap(st.id));
    // the feed is read from here: changes after it that a GC passed would be missing
    const from = read?.from ?? Math.max(st.caughtUp, st.applied);
    let after = Math.max(st.caughtUp, st.applied);
    let created = 0;
    let grown = 0;
    let given = read?.sets;
    for (;;) {
      const sets = given ?? (await this.source.changes(st.id, after, this.feedBatch));
      given = undefined;
      if (this.states.get(st.id) !== st) return;
      const [c, g, last] = this.applySets(st, sets, after);
      created += c;
      grown += g;
      after = last;
      if (sets.length < this.feedBatch) break;
      read = undefined; // more than one batch: the horizon the write read is older than this feed read
    }
    if (!this.settle(st, created, grown)) return;
    const horizon = read !== undefined ? this.noteHorizon(read.horizon) : await this.readHorizon();
    if (await this.reloadIfBehind(st, horizon, from)) return;
    st.caughtUp = Math.max(st.caughtUp, head, after);
  }

  /** Applies change sets to the tenant's copy: [rows created minus deleted, bytes grown, the last snap applied]. */
  private applySets(st: TenantState, sets: ChangeSet[], after: Snap): [number, number, Snap] {
    let created = 0;
    let grown = 0;
    for (const set of sets) {
      if (set.snap <= after) continue; // applied already (a write's own feed read may begin before a catch-up's)
      this.apply(st.id, set);
      st.applied = set.snap;
      after = set.snap;
      for (const c of set.changes) {
        const sign = c.operation === "OPERATION_CREATE" ? 1 : -1;
        created += sign;
        grown += sign * rowBytes(c);
      }
    }
    return [created, grown, after];
  }

  /** Counts a catch-up's rows and bytes; false when the tenant outgrew a lazy replica's cap (given back to the source). */
  private settle(st: TenantState, created: number, grown: number): boolean {
    st.rows += created;
    st.bytes += grown;
    this.bytes += grown;
    if (this.freshnessMs !== undefined) {
      if (this.bytes > this.maxBytes) this.evictFor(st.id);
      const limit =
        this.rows + created > this.maxRows ? "rows" : this.bytes > this.maxBytes ? "bytes" : undefined;
      if (limit !== undefined) {
        // a lazy replica gives a tenant that outgrew a cap back to the source (its memory is freed)
        this.rows += created;
        this.drop(st.id);
        this.markOversized(st.id, limit);
        return false;
      }
    }
    this.countRows(created);
    return true;
  }

  private async reload(st: TenantState): Promise<void> {
    this.drop(st.id);
    await this.ensure(st.id);
  }

  /** Forgets the tenant (deleted, re-created or reloaded): its reads load it again. */
  drop(id: string): void {
    const st = this.states.get(id);
    if (st === undefined) return;
    this.states.delete(id);
    this.rows -= st.rows;
    this.bytes -= st.bytes;
    void this.sink.deleteTenant(id);
  }

  /** Reads the source's GC horizon; mirrors a GC into the copy when it moved. */
  async readHorizon(): Promise<Snap> {
    if (!hasFreshness(this.source)) return this.horizon;
    return this.noteHorizon(await this.source.gcHorizon());
  }

  /** A GC horizon read from the source: mirrored into the copy when it moved. */
  private noteHorizon(h: Snap): Snap {
    if (h > this.horizon) {
      this.horizon = h;
      this.sink.collectUpTo(h);
    }
    return h;
  }

  /**
   * A committed write heard of (WriteNotices): catches the tenant up to its snap, which is exact (every write of the
   * tenant up to it has committed); a tenant not held yet is loaded.
   */
  async notice(tenantId: string, snap: Snap): Promise<void> {
    const st = this.states.get(tenantId) ?? (await this.ensure(tenantId));
    if (st !== undefined && st.caughtUp < snap) await this.catchUp(st, snap, true);
  }

  /** One refresh round: tenants created/deleted elsewhere, the source head, the GC horizon. */
  async refreshAll(): Promise<void> {
    const seen = new Map<string, Tenant>();
    let cursor: string | undefined;
    do {
      const page = await this.source.listTenants(1000, cursor);
      for (const t of page.items) seen.set(t.id, t);
      cursor = page.cursor || undefined;
    } while (cursor);
    for (const [id, st] of this.states) {
      const t = seen.get(id);
      if (t === undefined || t.createdAt.getTime() !== st.createdAt) this.drop(id);
    }
    // per-tenant heads where the source has them (PostgreSQL's heads are per tenant), else the store-wide head
    const heads = hasTenantHeads(this.source) ? await this.source.tenantHeads() : undefined;
    const head = heads === undefined ? await this.source.headSnap("") : 0;
    await this.readHorizon();
    for (const t of seen.values()) {
      const st = await this.ensure(t.id, t);
      const h = heads === undefined ? head : heads.get(t.id);
      if (st !== undefined && h !== undefined && st.caughtUp < h) await this.catchUp(st, h, true);
    }
  }

  /**
   * A lazy replica's look at the database (one round trip with a SqlStore: the look and the feed together; one
   * statement, plus the feed when the head moved, with another FreshnessSource): catches the tenant up when the
   * head moved, mirrors a GC, drops a tenant deleted (or re-created) elsewhere; answers the tenant's head snap, or
   * undefined when the tenant is no longer in the copy. Requests meanwhile use the current copy.
   */
  async freshen(st: TenantState): Promise<Snap | undefined> {
    st.checkedAt = Date.now();
    if (this.source.freshnessAndChanges !== undefined) {
      await this.serially(st, () => this.lookAndPull(st));
      return this.states.get(st.id) === st ? st.caughtUp : undefined;
    }
    const f = await this.look(st.id);
    if (this.states.get(st.id) === st && f.tenantCreatedAt !== st.createdAt) this.drop(st.id);
    else if (f.head > st.caughtUp) await this.catchUp(st, f.head, true);
    return this.states.get(st.id) === st ? st.caughtUp : undefined;
  }

  /**
   * Brings the tenant to at least `snap` (a read's, not trusted as a head): ONE look and feed where the source reads
   * them together (lazy replicas), else the head and the feed.
   */
  async reach(st: TenantState, snap: Snap): Promise<void> {
    if (this.freshnessMs === undefined || this.source.freshnessAndChanges === undefined) {
      await this.catchUp(st, snap, false);
      return;
    }
    while (st.busy !== undefined) await st.busy.catch(() => {});
    if (this.states.get(st.id) === st && st.caughtUp < snap) await this.freshen(st);
  }

  /**
   * The look and the feed after the copy in ONE round trip (a SqlStore on D1: one batch): a read with a snap token
   * newer than the copy (another instance's write) costs that one trip, at a replica that has the token's write, or
   * at the primary.
   */
  private async lookAndPull(st: TenantState): Promise<void> {
    const from = Math.max(st.caughtUp, st.applied);
    const { freshness: f, changes: sets } = await this.source.freshnessAndChanges!(st.id, from);
    this.heard(st.id, f);
    if (this.states.get(st.id) !== st) return;
    if (f.tenantCreatedAt !== st.createdAt) {
      this.drop(st.id);
      return;
    }
    if (await this.reloadIfBehind(st, f.horizon, from)) return;
    const [created, grown, after] = this.applySets(st, sets, from);
    if (!this.settle(st, created, grown)) return;
    st.caughtUp = Math.max(st.caughtUp, f.head, after);
  }

  /**
   * One look at the database for the tenant (held or not): the head schema to the listeners, the GC horizon
   * mirrored.
   */
  async look(tenantId: string): Promise<Freshness> {
    const f = await this.readFreshness(tenantId);
    this.heard(tenantId, f);
    return f;
  }

  /** A look at the database read elsewhere (overlay.ts): the head schema to the listeners, the GC horizon mirrored. */
  heard(tenantId: string, f: Freshness): void {
    if (f.headSchemaVersion !== undefined) {
      for (const listener of this.headSchemaListeners) listener(tenantId, f.headSchemaVersion, f.head);
    }
    this.noteHorizon(f.horizon);
  }

  private async readFreshness(tenantId: string): Promise<Freshness> {
    if (hasFreshness(this.source)) return await this.source.freshness(tenantId);
    const head = await this.source.headSnap(tenantId);
    const tenant = await this.source.getTenant(tenantId);
    return { head, horizon: this.horizon, tenantCreatedAt: tenant?.createdAt.getTime() };
  }
}
