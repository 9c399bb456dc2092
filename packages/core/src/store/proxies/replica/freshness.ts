/**
 * How the working set (working-set.ts) stays exact: which tenants the replica follows, up to which snap, and the
 * change feed that brings their entries there.
 *
 * - Following a tenant (`track`) costs one look at the database (head snap, GC horizon, the tenant's created_at and
 *   head schema; one statement with a FreshnessSource). Nothing of the tenant's data is read: entries are filled by
 *   the engine's own reads (routing.ts).
 * - `caughtUp`: every change of the tenant with snap <= caughtUp has been applied to its entries. Transaction ids are
 *   assigned in commit order by every SQL driver (the id counter row is updated first in each write transaction and
 *   stays locked until commit), so a feed read that sees snap `x` has every change `<= x`: after a feed read the
 *   tenant is caught up to max(head read before the feed, last applied snap).
 * - Catch-up (`catchUp`, `catchUpToRead`, `lookAndCatchUp`): the tenant's change feed after `caughtUp`, applied to
 *   every entry a change touches; changes to keys not held are skipped (the entry is read when first asked for).
 * - Writes of other processes: the Node server's timer (`refreshAll`) polls the heads of the tenants followed and
 *   catches them up; PostgreSQL's write notices catch a tenant up at once (`committed`). Lazy replicas (the Worker)
 *   instead look at the database on a read of the head snap once the last look is older than the freshness window.
 * - GC: the source collects; the replica caches the horizon (expired snaps are refused without SQL) and drops from
 *   its entries the rows no read at or above it can see. A tenant whose feed the horizon passed (changes skipped)
 *   is forgotten: its next read follows it again from the head, with no entry.
 * - Fills: a read that misses keys reads them from the store at its snap. When that snap is the tenant's caught-up
 *   snap, the answer becomes entries (`fill`): the change sets applied while the read was in flight are logged for
 *   the tenant and applied to the new entries before they are filed, so an entry never misses a change.
 */

import { joinShared, sharedWork } from "../../../shared-work.ts";
import type { Freshness, FreshnessSource, NearestReplica, TenantHeads } from "../../capabilities.ts";
import { hasFreshness, hasTenantHeads } from "../../capabilities.ts";
import type { ChangeSet, HeadSchemaListener, Snap, Store, Tenant } from "../../store.ts";
import type { MaybePromise } from "../../types.ts";
import { type Entry, TenantKeys, type WorkingSetBudget } from "./working-set.ts";

/** The pino-compatible subset the replica logs through. */
export interface ReplicaLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * What the replica reads from the store behind it: tenants, the head and the change feed (freshness), the engine
 * reads (fills), and, when the store has it, one cheap look at its head and GC horizon.
 */
export type ReplicaSource = Pick<Store, "listTenants" | "getTenant" | "headSnap" | "changes"> &
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
  /** The tenant's created_at (ms): a different value at a look = deleted and re-created elsewhere. */
  createdAt: number;
  /** Every change of the tenant with snap <= caughtUp is applied to its entries. */
  caughtUp: Snap;
  /** The last snap applied (>= caughtUp only while a catch-up runs). */
  applied: Snap;
  /** The catch-up in flight, if any (one at a time per tenant). */
  busy?: Promise<void>;
  /** Catch-ups started so far that read the database's feed to its head as they start (`shared`). */
  started: number;
  /** The catch-up in flight's number among those (`started` when it began), 0 when it is not one of them. */
  busyNumber: number;
  /** Date.now() of the tenant's last look at the database (request-driven freshness). */
  checkedAt: number;
  /** The tenant's entries. */
  readonly keys: TenantKeys;
  /**
   * Reads in flight whose answers will be filed (`startFill`), each with the change sets applied since it started:
   * a set is held by the fills older than it only, and leaves with the last of them.
   */
  readonly fills: Set<Fill>;
}

/** A read of missing keys in flight (`startFill`): its snap, and the change sets applied to the tenant since. */
export interface Fill {
  readonly snap: Snap;
  readonly sets: ChangeSet[];
}

export class TenantFreshness {
  private readonly states = new Map<string, TenantState>();
  private readonly tracking = new Map<string, Promise<TenantState | undefined>>();
  private readonly source: ReplicaSource;
  /** Request-driven freshness window (lazy replicas); undefined = a refresh timer keeps the copy fresh. */
  readonly freshnessMs?: number;
  private readonly headSchemaListeners: HeadSchemaListener[] = [];
  private readonly feedBatch: number;
  private readonly logger?: ReplicaLogger;
  /** Hears each tenant the replica starts to follow (whole-tenant preloading starts there). */
  private readonly onFollow?: (st: TenantState) => void;
  /** Hears the head each look through the source (the request's own session) read. */
  private readonly onSessionLook?: (tenantId: string, head: Snap) => void;
  /** The source reports its GC horizon, so expired snaps are known without asking it per read. */
  readonly horizonKnown: boolean;
  /** The source's GC horizon as last seen; snaps below it are expired. */
  horizon = 0;
  readonly budget: WorkingSetBudget;

  constructor(
    source: ReplicaSource,
    budget: WorkingSetBudget,
    opts: {
      feedBatch?: number;
      logger?: ReplicaLogger;
      freshnessMs?: number;
      onFollow?: (st: TenantState) => void;
      onSessionLook?: (tenantId: string, head: Snap) => void;
    },
  ) {
    this.source = source;
    this.budget = budget;
    this.freshnessMs = opts.freshnessMs;
    this.feedBatch = opts.feedBatch ?? 1000;
    this.logger = opts.logger;
    this.onFollow = opts.onFollow;
    this.onSessionLook = opts.onSessionLook;
    this.horizonKnown = hasFreshness(source);
  }

  onHeadSchema(listener: HeadSchemaListener): void {
    this.headSchemaListeners.push(listener);
  }

  /** The tenant's state when it is followed (no I/O). */
  state(id: string): TenantState | undefined {
    return this.states.get(id);
  }

  get tenants(): number {
    return this.states.size;
  }

  allStates(): IterableIterator<TenantState> {
    return this.states.values();
  }

  /**
   * The tenant's state, following it from its head with one look on first use; undefined when the source has no
   * such tenant.
   */
  track(id: string, known?: Tenant): MaybePromise<TenantState | undefined> {
    const st = this.states.get(id);
    if (st !== undefined) return st;
    const pending = this.tracking.get(id);
    if (pending !== undefined) return joinShared(pending, () => this.start(id, known));
    const started = sharedWork(this.start(id, known).finally(() => this.tracking.delete(id)));
    this.tracking.set(id, started);
    return started;
  }

  /** Whether the tenant's first look is in flight. */
  isTracking(id: string): boolean {
    return this.tracking.has(id);
  }

  private async start(id: string, known?: Tenant): Promise<TenantState | undefined> {
    const lookedAt = Date.now();
    const f = await this.look(id);
    const createdAt = f.tenantCreatedAt ?? known?.createdAt.getTime();
    if (createdAt === undefined) return undefined;
    const existing = this.states.get(id);
    if (existing !== undefined) return existing;
    const st: TenantState = {
      id,
      createdAt,
      caughtUp: f.head,
      applied: f.head,
      checkedAt: lookedAt,
      started: 0,
      busyNumber: 0,
      keys: new TenantKeys(this.budget),
      fills: new Set(),
    };
    this.states.set(id, st);
    this.onFollow?.(st);
    return st;
  }

  /** Stops following the tenant (deleted, re-created, or past the GC horizon): its entries go; a read tracks it again. */
  forget(id: string): void {
    const st = this.states.get(id);
    if (st === undefined) return;
    this.states.delete(id);
    st.keys.clear();
  }

  // ---- fills ----

  /**
   * A read of missing keys at `snap` is about to go to the store: a Fill (which collects the change sets applied to
   * the tenant meanwhile) when its answer can be filed, i.e. `snap` is the tenant's caught-up snap and no catch-up is
   * half done; else undefined.
   */
  startFill(st: TenantState, snap: Snap): Fill | undefined {
    if (snap !== st.caughtUp || st.applied !== st.caughtUp || this.states.get(st.id) !== st) return undefined;
    const fill: Fill = { snap, sets: [] };
    st.fills.add(fill);
    return fill;
  }

  /**
   * The store answered a read started with `startFill` (or failed: `made` undefined): the change sets applied since
   * it started are applied to the new entries, which are then filed (unless the tenant was forgotten meanwhile).
   * Only this fill held that list: fills that overlap without end never make one grow past their own lifetime.
   */
  endFill(st: TenantState, fill: Fill, made: Map<string, Entry> | undefined): void {
    st.fills.delete(fill);
    if (made !== undefined && this.states.get(st.id) === st) {
      for (const set of fill.sets) if (set.snap > fill.snap) st.keys.applySet(set, this.horizon, made);
      st.keys.fileAll(made);
      this.budget.evict();
    }
  }

  // ---- catch-up ----

  /**
   * Brings the tenant up to at least `target` (or the source head when no trusted target is given). Callers that
   * wait together share catch-ups (`shared`): a write waits for the catch-up in flight and at most one more. A lazy
   * replica's catch-up is a look with the feed (one round trip), which reaches the head whatever the write changed.
   */
  async catchUp(
    st: TenantState,
    target: Snap | undefined,
    trusted: boolean,
    read?: WriteFeedRead,
  ): Promise<void> {
    const done = target === undefined ? undefined : () => st.caughtUp >= target;
    // the sets a write read in its own transaction are applied by that write's own catch-up
    const head = trusted ? target : undefined;
    if (read !== undefined) return this.shared(st, () => this.pull(st, head, read), done, false, false);
    const work = this.looksWithFeed() ? () => this.lookAndPull(st) : () => this.pull(st, head);
    await this.shared(st, work, done, true, true);
  }

  /** Whether catch-ups are looks with the feed (a lazy replica over a source that reads both in one round trip). */
  private looksWithFeed(): boolean {
    return this.freshnessMs !== undefined && this.source.freshnessAndChanges !== undefined;
  }

  /**
   * Runs `work` on the tenant once no other catch-up of it is running, unless the tenant was forgotten meanwhile;
   * the catch-ups of one tenant never overlap.
   */
  private serially(st: TenantState, work: () => Promise<void>): Promise<void> {
    return this.shared(st, work, undefined, false, false);
  }

  /**
   * The tenant's catch-ups, one at a time, shared by their waiters: returns once `done()` holds (checked whenever
   * no catch-up runs), or the tenant is forgotten, or once `work` ran. With `join`, a catch-up that started after
   * this call and reads the feed to the head as it starts (`fresh`: a look or a pull, not sets read earlier)
   * serves this call too: every caller that arrives while one runs joins the next one, so a waiter waits for the
   * catch-up in flight and at most one more, however many arrive meanwhile (there is no queue in which each waits
   * its turn behind the ones before it). Without `done`, being served is enough; with it, when the shared one did
   * not make `done()` true (a look at a replica the change has not reached yet), the caller runs its own `work`
   * once the tenant is free.
   */
  private async shared(
    st: TenantState,
    work: () => Promise<void>,
    done: (() => boolean) | undefined,
    join: boolean,
    fresh: boolean,
  ): Promise<void> {
    const mark = st.started;
    for (;;) {
      if (done?.() === true || this.states.get(st.id) !== st) return;
      const busy = st.busy;
      if (busy === undefined) {
        const number = fresh ? ++st.started : 0;
        const run = sharedWork(work());
        st.busy = run;
        st.busyNumber = number;
        try {
          await run;
        } finally {
          if (st.busy === run) {
            st.busy = undefined;
            st.busyNumber = 0;
          }
        }
        return;
      }
      const serves = join && st.busyNumber > mark;
      // true once the other catch-up settled (either way), false when the wait outlived the limit
      const settled = await joinShared(
        busy.then(
          () => true,
          () => true,
        ),
        async () => false,
      );
      if (!settled) {
        // another request's catch-up did not settle in time (shared-work.ts): this one runs its own beside it;
        // applySets skips what either applied first
        if (st.busy === busy) {
          st.busy = undefined;
          st.busyNumber = 0;
        }
        continue;
      }
      if (serves) {
        if (done === undefined) return;
        join = false;
      }
    }
  }

  /**
   * The feed skips transactions at or before the GC horizon: if the horizon passed the snap a catch-up read the
   * feed from, changes may have been skipped, so the tenant is forgotten (true) and followed again on its next read.
   */
  private forgetIfBehind(st: TenantState, horizon: Snap, from: Snap): boolean {
    if (horizon <= from) return false;
    this.logger?.warn(
      { tenant: st.id },
      "replica fell behind the GC horizon; the tenant's entries are dropped",
    );
    this.forget(st.id);
    return true;
  }

  /**
   * Applies the feed after the tenant's last applied snap: read here, or (`read`) first the sets a write read in its
   * own transaction, which may begin at or before what a catch-up applied meanwhile (those are skipped).
   */
  private async pull(st: TenantState, trustedHead: Snap | undefined, read?: WriteFeedRead): Promise<void> {
    const head = trustedHead ?? (await this.source.headSnap(st.id));
    // the feed is read from here: changes after it that a GC passed would be missing
    const from = read?.from ?? Math.max(st.caughtUp, st.applied);
    let after = Math.max(st.caughtUp, st.applied);
    let given = read?.sets;
    for (;;) {
      const sets = given ?? (await this.source.changes(st.id, after, this.feedBatch));
      given = undefined;
      if (this.states.get(st.id) !== st) return;
      after = this.applySets(st, sets, after);
      if (sets.length < this.feedBatch) break;
      read = undefined; // more than one batch: the horizon the write read is older than this feed read
    }
    const horizon = read !== undefined ? this.noteHorizon(read.horizon) : await this.readHorizon();
    if (this.forgetIfBehind(st, horizon, from)) return;
    st.caughtUp = Math.max(st.caughtUp, head, after);
  }

  /** Applies change sets to the tenant's entries; answers the last snap applied. */
  private applySets(st: TenantState, sets: ChangeSet[], after: Snap): Snap {
    let grown = 0;
    for (const set of sets) {
      // applied already: a write's own feed read may begin before a catch-up's, and a catch-up that outlived its
      // waiters' patience (shared) may run beside the next one
      if (set.snap <= after || set.snap <= st.applied) continue;
      grown += st.keys.applySet(set, this.horizon);
      for (const fill of st.fills) fill.sets.push(set);
      st.applied = set.snap;
      after = set.snap;
    }
    this.budget.grow(grown);
    this.budget.evict();
    return after;
  }

  /** Reads the source's GC horizon; drops what it collected from the entries when it moved. */
  async readHorizon(): Promise<Snap> {
    if (!hasFreshness(this.source)) return this.horizon;
    return this.noteHorizon(await this.source.gcHorizon());
  }

  /** A GC horizon read from the source: rows deleted at or before it leave the entries when it moved. */
  private noteHorizon(h: Snap): Snap {
    if (h > this.horizon) {
      this.horizon = h;
      let freed = 0;
      for (const st of this.states.values()) freed += st.keys.collect(h);
      this.budget.grow(-freed);
    }
    return h;
  }

  /**
   * A committed write heard of (WriteNotices): catches a tenant followed up to its snap, which is exact (every write
   * of the tenant up to it has committed). Tenants not followed are left alone.
   */
  async committed(tenantId: string, snap: Snap): Promise<void> {
    const st = this.states.get(tenantId) ?? (await this.tracking.get(tenantId));
    if (st !== undefined && st.caughtUp < snap) await this.catchUp(st, snap, true);
  }

  /** One refresh round: tenants deleted or re-created elsewhere, the heads, the GC horizon. */
  async refreshAll(): Promise<void> {
    if (this.states.size === 0) {
      await this.readHorizon();
      return;
    }
    const seen = new Map<string, Tenant>();
    let cursor: string | undefined;
    do {
      const page = await this.source.listTenants(1000, cursor);
      for (const t of page.items) seen.set(t.id, t);
      cursor = page.cursor || undefined;
    } while (cursor);
    for (const [id, st] of this.states) {
      const t = seen.get(id);
      if (t === undefined || t.createdAt.getTime() !== st.createdAt) this.forget(id);
    }
    // per-tenant heads where the source has them (PostgreSQL's heads are per tenant), else the store-wide head
    const heads = hasTenantHeads(this.source) ? await this.source.tenantHeads() : undefined;
    const head = heads === undefined ? await this.source.headSnap("") : 0;
    await this.readHorizon();
    for (const st of [...this.states.values()]) {
      const h = heads === undefined ? head : heads.get(st.id);
      if (h !== undefined && st.caughtUp < h) await this.catchUp(st, h, true);
    }
  }

  /**
   * A lazy replica's look at the database (one round trip with a SqlStore: the look and the feed together; one
   * statement, plus the feed when the head moved, with another FreshnessSource): catches the tenant up when the
   * head moved, mirrors a GC, forgets a tenant deleted (or re-created) elsewhere; answers the tenant's head snap, or
   * undefined when the tenant is no longer followed. Requests meanwhile use the entries as they are. A look that
   * starts after this call while another catch-up runs serves it too (`shared`).
   */
  async lookAndCatchUp(st: TenantState): Promise<Snap | undefined> {
    st.checkedAt = Date.now();
    if (this.source.freshnessAndChanges !== undefined) {
      await this.shared(st, () => this.lookAndPull(st), undefined, true, true);
      return this.states.get(st.id) === st ? st.caughtUp : undefined;
    }
    const f = await this.look(st.id);
    if (this.states.get(st.id) === st && f.tenantCreatedAt !== st.createdAt) this.forget(st.id);
    else if (f.head > st.caughtUp) await this.catchUp(st, f.head, true);
    return this.states.get(st.id) === st ? st.caughtUp : undefined;
  }

  /**
   * Brings the tenant to at least `snap` (a read's, not trusted as a head): ONE look and feed where the source reads
   * them together (lazy replicas; the catch-up in flight may bring it there, or a look shared with others), else
   * the head and the feed.
   */
  async catchUpToRead(st: TenantState, snap: Snap): Promise<void> {
    if (!this.looksWithFeed()) {
      await this.catchUp(st, snap, false);
      return;
    }
    await this.shared(
      st,
      () => this.lookAndPull(st),
      () => st.caughtUp >= snap,
      true,
      true,
    );
  }

  /**
   * The look and the feed after the tenant's caught-up snap in ONE round trip (a SqlStore on D1: one batch): a read
   * with a snap token newer than the replica (another instance's write) costs that one trip, at a replica that has
   * the token's write, or at the primary.
   */
  private async lookAndPull(st: TenantState): Promise<void> {
    st.checkedAt = Date.now();
    const from = Math.max(st.caughtUp, st.applied);
    const { freshness: f, changes: sets } = await this.source.freshnessAndChanges!(st.id, from);
    this.onSessionLook?.(st.id, f.head);
    this.useLook(st.id, f);
    if (this.states.get(st.id) !== st) return;
    if (f.tenantCreatedAt !== st.createdAt) {
      this.forget(st.id);
      return;
    }
    if (this.forgetIfBehind(st, f.horizon, from)) return;
    const after = this.applySets(st, sets, from);
    st.caughtUp = Math.max(st.caughtUp, f.head, after);
  }

  /** One look at the database for the tenant (followed or not): the head schema to the listeners, the GC horizon. */
  async look(tenantId: string): Promise<Freshness> {
    const f = await this.readFreshness(tenantId);
    this.onSessionLook?.(tenantId, f.head);
    this.useLook(tenantId, f);
    return f;
  }

  /**
   * Catches the tenant up with a look and the change sets after `from` up to its head, read elsewhere (a fresh
   * token's looks over a replicated database, overlay.ts): the same rules as a look of its own.
   */
  async catchUpWith(st: TenantState, from: Snap, f: Freshness, sets: ChangeSet[]): Promise<void> {
    st.checkedAt = Date.now();
    await this.serially(st, async () => {
      if (this.states.get(st.id) !== st) return;
      if (f.tenantCreatedAt !== st.createdAt) {
        this.forget(st.id);
        return;
      }
      if (this.forgetIfBehind(st, f.horizon, from)) return;
      const after = this.applySets(st, sets, Math.max(st.caughtUp, st.applied));
      st.caughtUp = Math.max(st.caughtUp, f.head, after);
    });
  }

  /** A look at the database read elsewhere (overlay.ts): the head schema to the listeners, the GC horizon mirrored. */
  useLook(tenantId: string, f: Freshness): void {
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
