/**
 * ReplicaStore: the working-set replica in front of a SQL store. Every call is routed here:
 *
 * - Engine reads of a tenant the replica follows, at a snap it is caught up to: each key found in the working set
 *   (working-set.ts) answers from memory; the keys missing are read from the store in ONE call (the engine's own
 *   per-level batch, one statement), and that answer is filed as entries when the read's snap is the tenant's
 *   caught-up snap. A read at a newer snap (a snap token from another instance) catches the tenant up first
 *   (freshness.ts) and never answers from a stale entry; a key whose entry was filled after the read's snap goes to
 *   the store.
 * - Writes of this process: inner.write, then a catch-up to the write's snap before returning (read-your-writes).
 *   Where the inner store reads the feed in the write's own transaction (WriteFeed: PostgreSQL) and no other write
 *   of the tenant is in flight here, the write brings its catch-up along: no statement after it.
 * - Everything else (schemas, paged reads whose cursors are the inner store's, the feed, bundles, D1 bookmarks,
 *   object id listings, attribute reads of a whole type) is the inner store's: ForwardingStore.
 *
 * `ReplicaStore.open` (the Node server) reads nothing at open; a refresh timer (`refreshMs`) and the store's write
 * notices keep the tenants it follows caught up. `ReplicaStore.lazy` (Workers: no I/O outside a request) has no
 * timer: reading a followed tenant's head snap (once per check) costs no statement while the tenant's last look at
 * the database is younger than `freshnessMs`, else ONE round trip (head snap, GC horizon, the tenant's created_at
 * and head schema, with the change feed after the replica: one D1 batch); with `background`, a look due less than
 * `2 x freshnessMs` after the last runs once the response is ready instead of before it. Over a store with a
 * NearestReplica (D1), the reads that fill entries, and a fresh token's reads of a tenant not followed, go to the
 * request's nearest replica with the primary's changes laid over them (overlay.ts).
 */
import { PembaError } from "../../../errors.ts";
import type { Attribute, Tuple } from "../../../model.ts";
import { nextTurn } from "../../../next-turn.ts";
import {
  type CombinedReads,
  type EngineReads,
  type HeadSchemaSource,
  hasNearestReplica,
  hasWriteFeed,
  hasWriteNotices,
  queryBoth,
  type ReplicaReads,
} from "../../capabilities.ts";
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
import { type ReplicaLogger, type ReplicaSource, TenantFreshness, type TenantState } from "./freshness.ts";
import { laidOver, NearestOverlays } from "./overlay.ts";
import { PRELOAD_STEPS_PER_RUN, type PreloadKeys, type PreloadProgress, TenantPreloads } from "./preload.ts";
import { type Entry, WorkingSetBudget } from "./working-set.ts";

const expired = () => new PembaError("ERROR_CODE_SNAP_TOKEN_EXPIRED");

/**
 * The most keys (ids x relations or attributes) one joined fill statement reads: within the PostgreSQL driver's
 * lists of a statement prepared by name (NAMED_MAX_LIST), so joined fills keep one parsed statement per connection.
 */
const BATCH_MAX_KEYS = 16;

/** Check reads' fills of one tenant at one snap, read by one statement (ReplicaStore.joinFills). */
interface JoinedFills {
  tuples: TupleQuery[];
  attributes: AttributeQuery[];
  keys: number;
  rows: Promise<[readonly Tuple[], readonly Attribute[]]>;
}

/** A fill that may be joined with others: its missing keys, and its own answer picked from the joined rows. */
interface BatchableFill<R> {
  tuples: TupleQuery[];
  attributes: AttributeQuery[];
  pick: (rows: [readonly Tuple[], readonly Attribute[]]) => R;
}
const closedError = () => new Error("the replica is closed");

export const DEFAULT_REPLICA_REFRESH_MS = 1000;
/** The Node server's working set: 256 MB. */
export const DEFAULT_REPLICA_MEMORY_BYTES = 256 * 1048576;

/** Runs work after the current response is ready and keeps it alive (the Worker: `ctx.waitUntil`); never rejects. */
export type BackgroundWork = (start: () => Promise<unknown>) => void;

export interface ReplicaOptions {
  /** Estimated bytes the working set holds at most (default 256 MB); ignored when `budget` is given. */
  maxBytes?: number;
  /**
   * The budget shared with the replicas of other databases (the Worker's D1 bindings), so `maxBytes` holds for all
   * of them and eviction picks the least recently used entry of any. Default: this replica's own.
   */
  budget?: WorkingSetBudget;
  /** How often the inner head is polled for writes of other processes, in ms (default 1000; 0 = never). */
  refreshMs?: number;
  /** Change sets per feed read (default 1,000). */
  feedBatch?: number;
  logger?: ReplicaLogger;
  /**
   * Fill the working set with each followed tenant's rows in the background, within the budget (preload.ts): the
   * keys of its head schema's types, as this function lists them (service/preload-keys.ts: schemaPreloadKeys);
   * default: keys fill on demand only.
   */
  preload?: PreloadKeys;
}

export interface LazyReplicaOptions extends Omit<ReplicaOptions, "refreshMs"> {
  /** A read of the head snap looks for writes of other instances when the last look is older than this (ms). */
  freshnessMs?: number;
  /**
   * Runs a look at the database due within the second freshness window after the response (see the module
   * comment). Without it, such a look runs before the response.
   */
  background?: BackgroundWork;
}

/** Whether an engine read went to the store behind the replica (ReplicaStore.reporting). */
export interface ReadReport {
  store: boolean;
}

export interface ReplicaStats {
  /** Tenants followed. */
  tenants: number;
  /** Keys held (entries), all tenants of every replica sharing the budget. */
  entries: number;
  /** Rows held by this replica's entries (a row read by entity and by subject counts twice). */
  rows: number;
  /** Estimated bytes held, of every replica sharing the budget. */
  bytes: number;
  maxBytes: number;
  /** Keys of engine reads found in the working set, and keys read from the store (this replica). */
  hits: number;
  misses: number;
  /** Entries evicted for the budget (every replica sharing it). */
  evictions: number;
}

export class ReplicaStore extends ForwardingStore implements HeadSchemaSource {
  private readonly freshness: TenantFreshness;
  private readonly refreshMs: number;
  private readonly logger?: ReplicaLogger;
  /** Lazy replicas: runs a look after the response. */
  private readonly background?: BackgroundWork;
  private timer?: ReturnType<typeof setInterval>;
  private refreshing?: Promise<void>;
  private closed = false;
  /** Writes in flight per tenant: the feed is read within a write only while it is the tenant's only one. */
  private readonly writing = new Map<string, number>();
  /** The newest write notice heard per tenant while a write of it was in flight here. */
  private readonly noticed = new Map<string, Snap>();
  /** Over a replicated database (D1): reads at the request's nearest replica, the primary's changes laid over. */
  private readonly overlays?: NearestOverlays;
  /** Whole-tenant preloading, when asked for. */
  private readonly preloads?: TenantPreloads;
  /** Whether check reads' fills of one turn are joined into one statement (joinFills). */
  private readonly joinsFills: boolean;
  /** The fills being joined, per tenant and snap, until the statement goes out. */
  private readonly joining = new Map<string, JoinedFills>();

  private constructor(
    inner: Store & ReplicaSource,
    opts: ReplicaOptions,
    freshnessMs?: number,
    background?: BackgroundWork,
  ) {
    super(inner);
    this.background = background;
    const budget = opts.budget ?? new WorkingSetBudget(opts.maxBytes ?? DEFAULT_REPLICA_MEMORY_BYTES);
    this.freshness = new TenantFreshness(inner, budget, {
      feedBatch: opts.feedBatch,
      logger: opts.logger,
      freshnessMs,
      onFollow: opts.preload !== undefined ? (st) => this.schedulePreload(st) : undefined,
      onSessionLook: (tenantId, head) => this.overlays?.sessionSaw(tenantId, head),
    });
    if (opts.preload !== undefined) {
      this.preloads = new TenantPreloads(
        opts.preload,
        inner,
        this.freshness,
        (st, tuples, attributes) =>
          Promise.resolve(this.queryTuplesAndAttributes(st.id, st.caughtUp, tuples, attributes, 0)),
        (st, p) =>
          this.logger?.info(
            { tenant: st.id, end: p.end, reads: p.steps, ids: p.ids, bytes: budget.bytes },
            p.end === "budget"
              ? "replica: preloading stopped at the working set's budget; other keys fill on demand"
              : `replica: preloading ${p.end === "complete" ? "done" : "dropped"}`,
          ),
      );
    }
    this.refreshMs = opts.refreshMs ?? DEFAULT_REPLICA_REFRESH_MS;
    this.logger = opts.logger;
    // PostgreSQL: a read is a round trip to another process; SQLite answers in-process at once (joining would only
    // defer it); reads at a D1 request's nearest replica are the request's own (overlays)
    this.joinsFills = inner.kind === "postgres" && freshnessMs === undefined;
    const feed = inner.freshnessAndChanges?.bind(inner);
    if (freshnessMs !== undefined && hasNearestReplica(inner) && feed !== undefined) {
      this.overlays = new NearestOverlays({
        nearestReplica: () => inner.nearestReplica(),
        freshnessAndChanges: feed,
        // the request's own session: what the engine reads of the store behind the replica go through
        session: inner as unknown as ReplicaReads,
      });
    }
  }

  /**
   * The Node server's replica: reads nothing at open (a tenant is followed from its first request); keeps the
   * tenants it follows caught up by the store's write notices and a refresh timer.
   */
  static async open(inner: Store & ReplicaSource, opts: ReplicaOptions = {}): Promise<ReplicaStore> {
    const replica = new ReplicaStore(inner, opts);
    await replica.freshness.readHorizon();
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
        replica.committed(tenantId, snap);
      });
    }
    if (replica.refreshMs > 0) {
      const timer = setInterval(() => void replica.refresh(), replica.refreshMs);
      // Node: the timer alone keeps no process alive
      if (typeof timer === "object" && "unref" in timer) timer.unref();
      replica.timer = timer;
    }
    opts.logger?.info(
      { store: inner.kind, maxBytes: replica.freshness.budget.maxBytes },
      `replica: working set of at most ${mb(replica.freshness.budget.maxBytes)} MB, filled by reads`,
    );
    return replica;
  }

  /** A replica without a timer whose freshness is request-driven (see the module comment): for Workers. */
  static lazy(inner: Store & ReplicaSource, opts: LazyReplicaOptions = {}): ReplicaStore {
    const { background, freshnessMs, ...rest } = opts;
    return new ReplicaStore(
      inner,
      { ...rest, refreshMs: 0 },
      freshnessMs ?? DEFAULT_REPLICA_REFRESH_MS,
      background,
    );
  }

  /**
   * Starts (or continues) the tenant's preload unless one runs: after the response with background work (the
   * Worker: at most PRELOAD_STEPS_PER_RUN round trips per response), else on its own to the end (the Node server).
   */
  private schedulePreload(st: TenantState): void {
    const preloads = this.preloads;
    if (preloads === undefined || this.closed || !preloads.claim(st)) return;
    const failed = (e: unknown) => {
      this.logger?.warn({ err: e, tenant: st.id }, "replica: a preload step failed; it goes on later");
    };
    if (this.background !== undefined) {
      this.background(() => preloads.run(st, PRELOAD_STEPS_PER_RUN, nextTurn).catch(failed));
      return;
    }
    void preloads
      .run(st, Number.POSITIVE_INFINITY, () => (this.closed ? Promise.reject(closedError()) : nextTurn()))
      .catch((e: unknown) => {
        if (!this.closed) failed(e);
      });
  }

  /**
   * Runs the tenant's preload to its end now (following the tenant first), whatever runs in the background:
   * for tests and tools. Undefined when preloading is off or the tenant does not exist.
   */
  async preload(tenantId: string): Promise<PreloadProgress | undefined> {
    const preloads = this.preloads;
    if (preloads === undefined) return undefined;
    const st = await this.freshness.track(tenantId);
    if (st === undefined) return undefined;
    for (;;) {
      await preloads.whenIdle(st); // a run in progress elsewhere ends first
      const p = await preloads.run(st, Number.POSITIVE_INFINITY, nextTurn);
      if (p.end !== undefined || !preloads.isRunning(st)) return p;
    }
  }

  /** The tenant's preload so far (undefined when off, not followed, or not started). */
  preloadProgress(tenantId: string): PreloadProgress | undefined {
    const st = this.freshness.state(tenantId);
    return st === undefined ? undefined : this.preloads?.progress(st);
  }

  private committed(tenantId: string, snap: Snap): void {
    this.freshness.committed(tenantId, snap).catch((e: unknown) => {
      this.logger?.warn({ err: e, tenant: tenantId }, "replica catch-up after a write notice failed");
    });
  }

  /** A write of the tenant ended: the notices heard meanwhile catch the tenant up (mostly nothing left to read). */
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
    this.committed(tenantId, snap);
  }

  /**
   * Lazy replicas: `listener` hears the head schema version each look at the database read (with the snap of that
   * read), so the schema registry keeps its cached head fresh without statements of its own.
   */
  onHeadSchema(listener: HeadSchemaListener): void {
    this.freshness.onHeadSchema(listener);
  }

  /** Whether the replica follows the tenant (its engine reads can answer from the working set). */
  holds(tenantId: string): boolean {
    return this.freshness.state(tenantId) !== undefined;
  }

  /** The working set's budget (shared with the replicas of other databases when one was given). */
  get budget(): WorkingSetBudget {
    return this.freshness.budget;
  }

  stats(): ReplicaStats {
    let rows = 0;
    let hits = 0;
    let misses = 0;
    for (const st of this.freshness.allStates()) {
      rows += st.keys.rowCount();
      hits += st.keys.hits;
      misses += st.keys.misses;
    }
    const b = this.freshness.budget;
    return {
      tenants: this.freshness.tenants,
      entries: b.entries,
      rows,
      bytes: b.bytes,
      maxBytes: b.maxBytes,
      hits,
      misses,
      evictions: b.evictions,
    };
  }

  /** One refresh round: tenants deleted elsewhere, the heads of the tenants followed, the GC horizon. */
  refresh(): Promise<void> {
    this.refreshing ??= this.refreshOnce().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async refreshOnce(): Promise<void> {
    if (this.closed) return;
    try {
      await this.freshness.refreshAll();
    } catch (e) {
      this.logger?.warn({ err: e }, "replica refresh failed; retrying at the next interval");
    }
  }

  // ---- engine reads ----

  /**
   * A read of a followed tenant at a snap it is caught up to, answered by the entries (`found`) and, for the keys
   * missing, by ONE read of the store (`readMissing`, with `at` = 0) that `make` turns into entries, filed when the
   * snap is the tenant's caught-up snap; `answer` gives the rows the read sees from both.
   */
  private fill<R, T>(
    report: ReadReport | undefined,
    tenantId: string,
    st: TenantState,
    snap: Snap,
    readMissing: (store: EngineReads & Partial<CombinedReads>) => MaybePromise<R>,
    rowsOf: (r: R) => { tuples?: readonly Tuple[]; attributes?: readonly Attribute[] },
    make: (rows: R) => Map<string, Entry>,
    answer: (made: Map<string, Entry>) => T,
    batch?: BatchableFill<R>,
  ): MaybePromise<T> {
    if (report !== undefined) report.store = true;
    const fileable = this.freshness.startFill(st, snap);
    const done = (rows: R): T => {
      const made = make(rows);
      if (fileable !== undefined) this.freshness.endFill(st, fileable, made);
      return answer(made);
    };
    const fail = (e: unknown): never => {
      if (fileable !== undefined) this.freshness.endFill(st, fileable, undefined);
      throw e;
    };
    let pending: MaybePromise<R>;
    try {
      const joined =
        batch === undefined ? undefined : this.joinFills(tenantId, snap, batch.tuples, batch.attributes);
      pending =
        joined !== undefined ? joined.then(batch!.pick) : this.readAt(tenantId, snap, readMissing, rowsOf);
    } catch (e) {
      return fail(e);
    }
    return pending instanceof Promise ? pending.then(done, fail) : done(pending);
  }

  /**
   * Over a store whose reads are network round trips (PostgreSQL), the keys a check's read misses are read together
   * with the keys other reads of the tenant at the same snap miss in the same turn of the event loop: ONE statement
   * once the turn's I/O callbacks have run (nextTurn), each read filing the entries of its own keys from the rows of
   * all. Requests that arrive together (a burst) thus cost one round trip per walk level between them instead of one
   * each. At most BATCH_MAX_KEYS keys per statement (a read with more goes alone); undefined = read alone.
   */
  private joinFills(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
  ): Promise<[readonly Tuple[], readonly Attribute[]]> | undefined {
    if (!this.joinsFills) return undefined;
    let keys = 0;
    for (const q of tuples) keys += q.entityIds.length * q.relations.length;
    for (const q of attributes) {
      if (q.entityIds === undefined) return undefined; // a read of a whole type is not a fill of keys
      keys += q.entityIds.length * q.attributes.length;
    }
    if (keys > BATCH_MAX_KEYS) return undefined;
    const id = `${tenantId}\u0000${snap}`;
    let joined = this.joining.get(id);
    if (joined === undefined || joined.keys + keys > BATCH_MAX_KEYS) {
      const next: JoinedFills = { tuples: [], attributes: [], keys: 0, rows: undefined! };
      next.rows = nextTurn().then(() => {
        if (this.joining.get(id) === next) this.joining.delete(id);
        const inner = this.inner;
        if (next.attributes.length === 0) {
          return Promise.resolve(inner.queryTuples(tenantId, snap, next.tuples, 0)).then((t) => [t, []]);
        }
        if (next.tuples.length === 0) {
          return Promise.resolve(inner.queryAttributes(tenantId, snap, next.attributes, 0)).then((a) => [
            [],
            a,
          ]);
        }
        return queryBoth(inner, tenantId, snap, next.tuples, next.attributes, 0);
      });
      this.joining.set(id, next);
      joined = next;
    }
    joined.tuples.push(...tuples);
    joined.attributes.push(...attributes);
    joined.keys += keys;
    return joined.rows;
  }

  /**
   * `read` of the store at `snap`: in the request's own session, or over a replicated database (D1) at its nearest
   * replica with the primary's changes laid over the rows (the session may not have reached the snap the replica is
   * caught up to).
   */
  private readAt<R>(
    tenantId: string,
    snap: Snap,
    read: (store: EngineReads & Partial<CombinedReads>) => MaybePromise<R>,
    rowsOf: (r: R) => { tuples?: readonly Tuple[]; attributes?: readonly Attribute[] },
  ): MaybePromise<R> {
    const overlays = this.overlays;
    if (overlays === undefined) return read(this.inner);
    const over = (overlay: ReturnType<NearestOverlays["at"]>): MaybePromise<R> =>
      overlay === undefined
        ? read(this.inner)
        : laidOver(
            overlay,
            tenantId,
            snap,
            (r) => read(r),
            rowsOf,
            (scratch, at) =>
              read({
                queryTuples: (t, _s, q) => scratch.queryTuples(t, at, q, 0),
                querySubjectTuples: (t, _s, q) => scratch.querySubjectTuples(t, at, q, 0),
                queryAttributes: (t, _s, q) => scratch.queryAttributes(t, at, q, 0),
              }),
          );
    const prepared = overlays.prepare(tenantId, snap, (f) => this.freshness.useLook(tenantId, f));
    return prepared instanceof Promise ? prepared.then(over) : over(prepared);
  }

  /**
   * An engine read: from the working set where the tenant is followed and caught up to `snap` (`fromKeys`), once it
   * is followed or caught up otherwise; a tenant the source does not have, or a fresh token's read the request laid
   * over its nearest replica, reads the store (`fromInner`).
   */
  private engineRead<T>(
    report: ReadReport | undefined,
    tenantId: string,
    snap: Snap,
    fromKeys: (st: TenantState) => MaybePromise<T>,
    fromInner: () => MaybePromise<T>,
  ): MaybePromise<T> {
    const st = this.freshness.state(tenantId);
    if (st !== undefined && snap <= st.caughtUp) return fromKeys(st);
    // the read waits for a look at the database (following the tenant, or catching it up to the read's snap)
    if (report !== undefined) report.store = true;
    return this.slow(tenantId, snap, fromKeys, fromInner);
  }

  private async slow<T>(
    tenantId: string,
    snap: Snap,
    fromKeys: (st: TenantState) => MaybePromise<T>,
    fromInner: () => MaybePromise<T>,
  ): Promise<T> {
    // this request's look set its reads up at the nearest replica: no second look
    if (this.overlays?.at(tenantId, snap) !== undefined && this.freshness.state(tenantId) === undefined) {
      return await fromInner();
    }
    for (;;) {
      const st = await this.freshness.track(tenantId);
      if (st === undefined) return await fromInner();
      if (snap > st.caughtUp) await this.freshness.catchUpToRead(st, snap);
      if (this.freshness.state(tenantId) !== st) continue; // forgotten meanwhile: follow it again
      if (snap > st.caughtUp) return await fromInner();
      return await fromKeys(st);
    }
  }

  /** A read the working set does not answer: at the nearest replica laid over where this request set one up. */
  private innerRead<T>(
    report: ReadReport | undefined,
    tenantId: string,
    snap: Snap,
    read: (store: EngineReads & Partial<CombinedReads>) => MaybePromise<T>,
    rowsOf: (r: T) => { tuples?: readonly Tuple[]; attributes?: readonly Attribute[] },
  ): MaybePromise<T> {
    if (report !== undefined) report.store = true;
    const overlay = this.overlays?.at(tenantId, snap);
    if (overlay === undefined) return read(this.inner);
    return laidOver(
      overlay,
      tenantId,
      snap,
      (r) => read(r),
      rowsOf,
      (scratch, at) =>
        read({
          queryTuples: (t, _s, q, a) => scratch.queryTuples(t, at, q, a),
          querySubjectTuples: (t, _s, q, a) => scratch.querySubjectTuples(t, at, q, a),
          queryAttributes: (t, _s, q, a) => scratch.queryAttributes(t, at, q, a),
        }),
    );
  }

  override headSnap(tenantId: string): MaybePromise<Snap> {
    const st = this.freshness.state(tenantId);
    if (st !== undefined) {
      // background preloading (the Worker) goes on after each response until it ends
      if (this.preloads !== undefined && this.background !== undefined) this.schedulePreload(st);
      const window = this.freshness.freshnessMs;
      if (window === undefined) return st.caughtUp;
      const age = Date.now() - st.checkedAt;
      if (age < window) return st.caughtUp;
      // with background work (the Worker), a look due less than one more window ago runs once this response is
      // ready: no check waits for it, and a check without a token sees writes elsewhere within two windows
      if (this.background !== undefined && age < 2 * window) {
        st.checkedAt = Date.now();
        this.background(() =>
          this.freshness.lookAndCatchUp(st).catch((e: unknown) => {
            this.logger?.warn({ err: e, tenant: tenantId }, "replica: a look at the database failed");
          }),
        );
        return st.caughtUp;
      }
      return this.freshness.lookAndCatchUp(st).then((head) => head ?? this.headSnap(tenantId));
    }
    const tracked = this.freshness.track(tenantId);
    if (!(tracked instanceof Promise)) return tracked?.caughtUp ?? this.inner.headSnap(tenantId);
    return tracked.then((st) => st?.caughtUp ?? this.inner.headSnap(tenantId));
  }

  /**
   * A snap token's check. Lazy replicas answer a token newer than the replica (another instance's write) with ONE
   * look at the database, in the request's session (so at a replica that has the token's write, else the primary):
   * for a followed tenant it also catches it up to the token (the look and the feed in one round trip); for any
   * tenant it reports the head schema at a snap >= the token, so the schema registry need not read it again.
   */
  override assertSnapReadable(tenantId: string, snap: Snap): MaybePromise<void> {
    if (snap < this.freshness.horizon) throw expired();
    const st = this.freshness.state(tenantId);
    const lazy = this.freshness.freshnessMs !== undefined && this.freshness.horizonKnown;
    const overlays = this.overlays;
    if (st !== undefined && this.freshness.horizonKnown) {
      if (!lazy || snap <= st.caughtUp) return;
      if (overlays !== undefined) return this.nearestCatchUp(st, snap, overlays);
      return this.freshness.lookAndCatchUp(st).then(() => {
        if (snap < this.freshness.horizon) throw expired();
      });
    }
    if (lazy && overlays !== undefined) {
      return overlays.look(tenantId, snap).then((f) => {
        this.freshness.useLook(tenantId, f);
        if (snap < f.horizon) throw expired();
      });
    }
    if (lazy) {
      return this.freshness.look(tenantId).then((f) => {
        if (snap < f.horizon) throw expired();
      });
    }
    return this.inner.assertSnapReadable(tenantId, snap);
  }

  /**
   * A token newer than a followed tenant, over a replicated database (D1): the nearest replica's look and feed, and
   * where it has not the token's write, the primary's look and feed after it (overlay.ts): the tenant is caught up
   * to the token and the request's reads of missing keys are set up at the nearest replica, with at most ONE round
   * trip to the primary in all.
   */
  private async nearestCatchUp(st: TenantState, snap: Snap, overlays: NearestOverlays): Promise<void> {
    const from = Math.max(st.caughtUp, st.applied);
    const f = await overlays.look(st.id, snap, from);
    this.freshness.useLook(st.id, f);
    if (snap < f.horizon) throw expired();
    if (f.feed !== undefined) await this.freshness.catchUpWith(st, from, f, f.feed);
    else await this.freshness.lookAndCatchUp(st); // the tenant was re-created meanwhile: its own look settles it
    if (snap < this.freshness.horizon) throw expired();
  }

  private queryTuplesReported(
    report: ReadReport | undefined,
    tenantId: string,
    snap: Snap,
    queries: TupleQuery[],
    at: number,
  ): MaybePromise<readonly Tuple[]> {
    // a followed tenant caught up to the read's snap whose every key is held: answered without the closures
    const followed = this.freshness.state(tenantId);
    if (followed !== undefined && snap <= followed.caughtUp) {
      const held = followed.keys.heldTuples(queries, snap, at);
      if (held !== undefined) return held;
    }
    return this.engineRead(
      report,
      tenantId,
      snap,
      (st) => {
        const keys = st.keys;
        const split = keys.splitTuples(queries, snap);
        const missing = split.missing;
        if (missing === undefined) return keys.answerTuples(queries, split, snap, at);
        return this.fill(
          report,
          tenantId,
          st,
          snap,
          (s) => s.queryTuples(tenantId, snap, missing, 0),
          (tuples) => ({ tuples }),
          (rows) => keys.tupleEntries(missing, rows, snap),
          (made) => keys.answerTuples(queries, split, snap, at, made),
          { tuples: missing, attributes: [], pick: ([t]) => t },
        );
      },
      () =>
        this.innerRead(
          report,
          tenantId,
          snap,
          (s) => s.queryTuples(tenantId, snap, queries, at),
          (tuples) => ({ tuples }),
        ),
    );
  }

  private querySubjectTuplesReported(
    report: ReadReport | undefined,
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at: number,
  ): MaybePromise<readonly Tuple[]> {
    // a followed tenant caught up to the read's snap whose every key is held: answered without the closures
    const followed = this.freshness.state(tenantId);
    if (followed !== undefined && snap <= followed.caughtUp) {
      const held = followed.keys.heldSubjects(queries, snap, at);
      if (held !== undefined) return held;
    }
    return this.engineRead(
      report,
      tenantId,
      snap,
      (st) => {
        const keys = st.keys;
        const split = keys.splitSubjects(queries, snap);
        const missing = split.missing;
        if (missing === undefined) return keys.answerSubjects(queries, split, snap, at);
        return this.fill(
          report,
          tenantId,
          st,
          snap,
          (s) => s.querySubjectTuples(tenantId, snap, missing, 0),
          (tuples) => ({ tuples }),
          (rows) => keys.subjectEntries(missing, rows, snap),
          (made) => keys.answerSubjects(queries, split, snap, at, made),
        );
      },
      () =>
        this.innerRead(
          report,
          tenantId,
          snap,
          (s) => s.querySubjectTuples(tenantId, snap, queries, at),
          (tuples) => ({ tuples }),
        ),
    );
  }

  private queryAttributesReported(
    report: ReadReport | undefined,
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at: number,
  ): MaybePromise<readonly Attribute[]> {
    // a followed tenant caught up to the read's snap whose every key is held: answered without the closures
    const followed = this.freshness.state(tenantId);
    if (followed !== undefined && snap <= followed.caughtUp) {
      const held = followed.keys.heldAttributes(queries, snap, at);
      if (held !== undefined) return held;
    }
    return this.engineRead(
      report,
      tenantId,
      snap,
      (st) => {
        const keys = st.keys;
        const split = keys.splitAttributes(queries, snap);
        const missing = split.missing;
        if (missing === undefined) return keys.answerAttributes(queries, split, snap, at);
        let byType: Attribute[] | undefined;
        return this.fill(
          report,
          tenantId,
          st,
          snap,
          (s) => s.queryAttributes(tenantId, snap, missing, 0),
          (attributes) => ({ attributes }),
          (rows) => {
            const [made, whole] = keys.attributeEntries(missing, rows, snap);
            byType = whole;
            return made;
          },
          (made) => keys.answerAttributes(queries, split, snap, at, made, byType),
          { tuples: [], attributes: missing, pick: ([, a]) => a },
        );
      },
      () =>
        this.innerRead(
          report,
          tenantId,
          snap,
          (s) => s.queryAttributes(tenantId, snap, queries, at),
          (attributes) => ({ attributes }),
        ),
    );
  }

  private queryTuplesAndAttributesReported(
    report: ReadReport | undefined,
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at: number,
  ): MaybePromise<[readonly Tuple[], readonly Attribute[]]> {
    return this.engineRead(
      report,
      tenantId,
      snap,
      (st): MaybePromise<[readonly Tuple[], readonly Attribute[]]> => {
        const keys = st.keys;
        const hits = keys.hits;
        const heldTuples = keys.heldTuples(tuples, snap, at);
        if (heldTuples !== undefined) {
          const heldAttributes = keys.heldAttributes(attributes, snap, at);
          if (heldAttributes !== undefined) return [heldTuples, heldAttributes];
          keys.hits = hits; // the split below counts the read's hits
        }
        const ts = keys.splitTuples(tuples, snap);
        const as = keys.splitAttributes(attributes, snap);
        if (ts.missing === undefined && as.missing === undefined) {
          return [keys.answerTuples(tuples, ts, snap, at), keys.answerAttributes(attributes, as, snap, at)];
        }
        const mt = ts.missing ?? [];
        const ma = as.missing ?? [];
        let byType: Attribute[] | undefined;
        return this.fill(
          report,
          tenantId,
          st,
          snap,
          (s) => queryBoth(s, tenantId, snap, mt, ma, 0),
          ([t, a]) => ({ tuples: t, attributes: a }),
          ([rt, ra]) => {
            const made = keys.tupleEntries(mt, rt, snap);
            const [madeA, whole] = keys.attributeEntries(ma, ra, snap);
            byType = whole;
            for (const [k, e] of madeA) made.set(k, e);
            return made;
          },
          (made) => [
            keys.answerTuples(tuples, ts, snap, at, made),
            keys.answerAttributes(attributes, as, snap, at, made, byType),
          ],
          { tuples: mt, attributes: ma, pick: (rows) => rows },
        );
      },
      () =>
        this.innerRead(
          report,
          tenantId,
          snap,
          (s) => queryBoth(s, tenantId, snap, tuples, attributes, at),
          ([t, a]) => ({ tuples: t, attributes: a }),
        ),
    );
  }

  override queryTuples(
    tenantId: string,
    snap: Snap,
    queries: TupleQuery[],
    at = Date.now(),
  ): MaybePromise<readonly Tuple[]> {
    return this.queryTuplesReported(undefined, tenantId, snap, queries, at);
  }

  override querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at = Date.now(),
  ): MaybePromise<readonly Tuple[]> {
    return this.querySubjectTuplesReported(undefined, tenantId, snap, queries, at);
  }

  override queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at = Date.now(),
  ): MaybePromise<readonly Attribute[]> {
    return this.queryAttributesReported(undefined, tenantId, snap, queries, at);
  }

  override queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at = Date.now(),
  ): MaybePromise<[readonly Tuple[], readonly Attribute[]]> {
    return this.queryTuplesAndAttributesReported(undefined, tenantId, snap, tuples, attributes, at);
  }

  /**
   * The engine reads, each setting `report.store` when any part of it went to the store behind the replica (a
   * statement for keys not held, a read the working set does not answer, or a wait for a look at the database);
   * left false, the read was answered from the working set alone. For traces (observe/traced-reads.ts).
   */
  reporting(report: ReadReport): EngineReads & CombinedReads {
    return {
      queryTuples: (t, s, q, at = Date.now()) => this.queryTuplesReported(report, t, s, q, at),
      querySubjectTuples: (t, s, q, at = Date.now()) => this.querySubjectTuplesReported(report, t, s, q, at),
      queryAttributes: (t, s, q, at = Date.now()) => this.queryAttributesReported(report, t, s, q, at),
      queryTuplesAndAttributes: (t, s, tq, aq, at = Date.now()) =>
        this.queryTuplesAndAttributesReported(report, t, s, tq, aq, at),
    };
  }

  // ---- writes ----

  override async write(tenantId: string, req: WriteRequest): Promise<Snap> {
    const st = this.freshness.state(tenantId);
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
          await this.freshness.catchUp(st, snap, true, { from, sets: read.sets, horizon: read.horizon });
        } catch (e) {
          this.logger?.warn({ err: e, tenant: tenantId }, "replica catch-up after a write failed");
        }
        // the tenant is caught up, unless it was forgotten during the write
        if (this.freshness.state(tenantId) === st) return snap;
      }
    } finally {
      this.writeEnded(tenantId);
    }
    try {
      // a tenant not followed is not followed for a write: its first read looks at the head
      const now = this.freshness.state(tenantId) ?? (await this.pendingTrack(tenantId));
      if (now !== undefined) await this.freshness.catchUp(now, snap, true);
    } catch (e) {
      // the write is committed; reads at its snap catch up on their own
      this.logger?.warn({ err: e, tenant: tenantId }, "replica catch-up after a write failed");
    }
    return snap;
  }

  /** The tenant's state once a first look in flight ends (it may have read the head before a write committed). */
  private async pendingTrack(tenantId: string): Promise<TenantState | undefined> {
    return this.freshness.isTracking(tenantId) ? await this.freshness.track(tenantId) : undefined;
  }

  override async gc(olderThan: Date): Promise<number> {
    const removed = await this.inner.gc(olderThan);
    await this.freshness.readHorizon();
    return removed;
  }

  // ---- tenants ----

  override async createTenant(id: string, name: string): Promise<Tenant> {
    const tenant = await this.inner.createTenant(id, name);
    this.freshness.forget(id);
    return tenant;
  }

  override async deleteTenant(id: string): Promise<Tenant | undefined> {
    const deleted = await this.inner.deleteTenant(id);
    this.freshness.forget(id);
    return deleted;
  }

  override async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.refreshing;
    await this.inner.close();
  }
}

const mb = (bytes: number) => +(bytes / 1048576).toFixed(2);
