/**
 * ReadReplicaStore: a SQL database's primary and its read replicas (PostgreSQL hot standbys, sqld replicas) as one
 * Store. Writes go to the primary. A read at a snap goes to the first replica (nearest first) that has replayed the
 * snap, else to the primary; a look at the database (the head, the feed) goes to a replica whose head is at least
 * the newest snap of the tenant this process has seen (its writes, the write notices, the snaps it read at), else
 * to the primary. A replica's error sends the read to the primary and leaves the replica out for a while.
 *
 * "Replayed the snap" is read on the replica itself: the tenant's head there (Store.headSnap: PostgreSQL's
 * head_tx as replayed, libSQL's transaction counter). A tenant's writes commit in snap order (PostgreSQL: under
 * its row lock; SQLite: one writer) and a replica replays commits in that order, so a replica whose tenant head is
 * at least `s` holds every write of the tenant up to `s`: a read there at `s` answers what the primary answers.
 * Each replica's heads are remembered (a replica only moves forward) and forgotten on its error (it may have
 * been restarted from older data).
 *
 * It sits under the working-set replica (proxies/replica/) like any database: fills, looks, SQL-mode and paged
 * reads reach it as calls with a tenant and a snap; the engine and the routes do not know replicas exist.
 */
import { isPembaError } from "../../../errors.ts";
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../../model.ts";
import { joinShared, sharedWork } from "../../../shared-work.ts";
import {
  type BulkImports,
  type CombinedReads,
  type EmptyTenantDelete,
  type EmptyTenants,
  type FeedRead,
  type Freshness,
  type FreshnessSource,
  hasBulkImports,
  hasEmptyTenants,
  hasFreshness,
  hasRowCounts,
  hasTenantHeads,
  hasWriteFeed,
  type ImportChunkResult,
  type ImportRow,
  queryBoth,
  type RowCounts,
  type TenantHeads,
  type WriteFeed,
} from "../../capabilities.ts";
import type {
  AttributeQuery,
  ChangeSet,
  HeadSchemaRecord,
  Page,
  SchemaRecord,
  Snap,
  Store,
  SubjectTupleQuery,
  TupleQuery,
  WriteRequest,
} from "../../store.ts";
import { ForwardingStore } from "../forwarding.ts";

/**
 * How long a read waits for a libSQL replica to reach its snap before the primary answers it (ms): sqld replicas
 * replay a write within a few ms of its commit, while the primary of a replicated libSQL deployment is often a
 * region away (a round trip of tens of ms or more).
 */
export const DEFAULT_LIBSQL_REPLICA_WAIT_MS = 30;

export interface ReadReplicaOptions {
  /**
   * How long a read whose snap no replica has replayed waits for the nearest one (polling its head) before it goes
   * to the primary, ms; 0 (default): to the primary at once. Worth it where the primary is far (a region away)
   * and replication takes less than a round trip to it.
   */
  waitMs?: number;
  /** The interval of those polls, ms (default 5). */
  pollMs?: number;
  /** How long a replica that failed is left out before it is tried again, ms (default 1000). */
  retryMs?: number;
  /** Each read's destination, for metrics and tests: a replica's index (nearest first) or "primary". */
  onRoute?: (kind: string, to: number | "primary") => void;
}

/** Where the reads went (and why some went to the primary). */
export interface ReadReplicaStats {
  /** Reads (and looks) answered by each replica, nearest first. */
  replica: number[];
  /** Reads answered by the primary because no replica had reached their snap (or all were left out). */
  primaryBehind: number;
  /** Reads answered by the primary after a replica failed them. */
  primaryAfterError: number;
  /** Reads that waited for a replica to reach their snap and then read there. */
  waited: number;
}

/** A replica: opened on first use (and again after a failed open), its tenants' heads as last read there. */
class ReplicaLink {
  readonly heads = new Map<string, Snap>();
  #store: Store | undefined;
  #opening: Promise<Store> | undefined;
  /** Left out until this time (ms) after an error. */
  downUntil = 0;

  readonly open: () => Promise<Store> | Store;

  constructor(open: () => Promise<Store> | Store) {
    this.open = open;
  }

  store(): Promise<Store> {
    if (this.#store !== undefined) return Promise.resolve(this.#store);
    if (this.#opening !== undefined) return joinShared(this.#opening, () => this.#open());
    this.#opening = sharedWork(this.#open());
    return this.#opening;
  }

  #open(): Promise<Store> {
    return Promise.resolve()
      .then(() => this.open())
      .then(
        (s) => {
          this.#store ??= s;
          return this.#store;
        },
        (e: unknown) => {
          this.#opening = undefined;
          throw e;
        },
      );
  }

  /** The tenant's head as the replica has it now (remembered). */
  async readHead(tenantId: string): Promise<Snap> {
    const head = await (await this.store()).headSnap(tenantId);
    this.noteHead(tenantId, head);
    return head;
  }

  noteHead(tenantId: string, head: Snap): void {
    if (head > (this.heads.get(tenantId) ?? -1)) this.heads.set(tenantId, head);
  }

  async close(): Promise<void> {
    const s = this.#store ?? (await this.#opening?.catch(() => undefined));
    this.#store = undefined;
    await s?.close();
  }
}

/** A database as the replicas and the primary are: a Store with SqlStore's optional capabilities. */
type Database = Store & Partial<FreshnessSource> & Partial<TenantHeads> & Partial<RowCounts>;

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

export class ReadReplicaStore
  extends ForwardingStore
  implements
    CombinedReads,
    Partial<FreshnessSource>,
    Partial<TenantHeads>,
    Partial<RowCounts>,
    Partial<EmptyTenants>,
    Partial<WriteFeed>,
    Partial<BulkImports>
{
  readonly #replicas: ReplicaLink[];
  readonly #waitMs: number;
  readonly #pollMs: number;
  readonly #retryMs: number;
  readonly #onRoute: ReadReplicaOptions["onRoute"];
  /** Per tenant, the newest snap this process has seen: a look must answer at least it. */
  readonly #known = new Map<string, Snap>();
  readonly #stats: ReadReplicaStats;

  // the primary's capabilities, where it has them
  readonly gcHorizon?: FreshnessSource["gcHorizon"];
  readonly freshness?: FreshnessSource["freshness"];
  readonly freshnessAndChanges?: FreshnessSource["freshnessAndChanges"];
  readonly tenantHeads?: TenantHeads["tenantHeads"];
  readonly countTuples?: RowCounts["countTuples"];
  readonly countAttributes?: RowCounts["countAttributes"];
  readonly deleteEmptyTenant?: EmptyTenants["deleteEmptyTenant"];
  readonly writeReadingFeed?: WriteFeed["writeReadingFeed"];
  readonly importChunk?: BulkImports["importChunk"];

  /**
   * `primary`: the database's primary (opened); `replicas`: how to open each replica, nearest first (opened on
   * first use, so a replica down at start only sends reads to the primary).
   */
  constructor(
    primary: Database,
    replicas: readonly (() => Promise<Store> | Store)[],
    opts: ReadReplicaOptions = {},
  ) {
    super(primary);
    this.#replicas = replicas.map((open) => new ReplicaLink(open));
    this.#waitMs = opts.waitMs ?? 0;
    this.#pollMs = opts.pollMs ?? 5;
    this.#retryMs = opts.retryMs ?? 1000;
    this.#onRoute = opts.onRoute;
    this.#stats = { replica: replicas.map(() => 0), primaryBehind: 0, primaryAfterError: 0, waited: 0 };

    if (hasFreshness(primary)) {
      this.gcHorizon = () => primary.gcHorizon();
      this.freshness = (tenantId) =>
        this.#look(tenantId, "freshness", (s) => freshnessOf(s).freshness(tenantId), freshLook(tenantId));
      if (primary.freshnessAndChanges !== undefined) {
        this.freshnessAndChanges = (tenantId, after) =>
          this.#look(
            tenantId,
            "freshness",
            (s) => freshnessOf(s).freshnessAndChanges!(tenantId, after),
            (r) => freshLook(tenantId)(r.freshness),
          );
      }
    }
    if (hasTenantHeads(primary)) this.tenantHeads = () => this.#tenantHeads(primary);
    if (hasRowCounts(primary)) {
      this.countTuples = (tenantId, snap, filter, at) =>
        this.#read(tenantId, snap, "count_tuples", (s) =>
          rowCountsOf(s).countTuples(tenantId, snap, filter, at),
        );
      this.countAttributes = (tenantId, snap, filter, at) =>
        this.#read(tenantId, snap, "count_attributes", (s) =>
          rowCountsOf(s).countAttributes(tenantId, snap, filter, at),
        );
    }
    if (hasEmptyTenants(primary))
      this.deleteEmptyTenant = (id): Promise<EmptyTenantDelete> => primary.deleteEmptyTenant(id);
    if (hasWriteFeed(primary)) {
      this.writeReadingFeed = async (tenantId, req, after): Promise<FeedRead> => {
        const read = await primary.writeReadingFeed(tenantId, req, after);
        this.#see(tenantId, read.snap);
        return read;
      };
    }
    if (hasBulkImports(primary)) {
      this.importChunk = async (
        tenantId: string,
        tuples: ImportRow<Tuple>[],
        attributes: ImportRow<Attribute>[],
        opts: Parameters<BulkImports["importChunk"]>[3],
      ): Promise<ImportChunkResult> => {
        const result = await primary.importChunk(tenantId, tuples, attributes, opts);
        if (result.snap !== undefined) this.#see(tenantId, result.snap);
        return result;
      };
    }
  }

  /** Where the reads went since the store opened. */
  stats(): ReadReplicaStats {
    return { ...this.#stats, replica: [...this.#stats.replica] };
  }

  /**
   * Write notices come from the primary (PostgreSQL delivers NOTIFY there only): each raises the tenant's known snap
   * before the listener (the working set) catches up to it.
   */
  protected override heard(tenantId: string, snap: Snap): void {
    this.#see(tenantId, snap);
  }

  #see(tenantId: string, snap: Snap): void {
    if (snap > (this.#known.get(tenantId) ?? 0)) this.#known.set(tenantId, snap);
  }

  #usable(): ReplicaLink[] {
    const now = Date.now();
    return this.#replicas.filter((r) => r.downUntil <= now);
  }

  #failed(r: ReplicaLink): void {
    r.downUntil = Date.now() + this.#retryMs;
    r.heads.clear();
  }

  #routed(kind: string, to: number | "primary", why?: "behind" | "error" | "waited"): void {
    if (to === "primary") {
      if (why === "error") this.#stats.primaryAfterError++;
      else this.#stats.primaryBehind++;
    } else {
      this.#stats.replica[to]!++;
      if (why === "waited") this.#stats.waited++;
    }
    this.#onRoute?.(kind, to);
  }

  /**
   * The nearest usable replica that has replayed the tenant up to `snap`: its remembered head says so, or its head
   * read there now does.
   */
  async #reached(tenantId: string, snap: Snap): Promise<ReplicaLink | undefined> {
    for (const r of this.#usable()) {
      if ((r.heads.get(tenantId) ?? -1) >= snap) return r;
      try {
        if ((await r.readHead(tenantId)) >= snap) return r;
      } catch {
        this.#failed(r);
      }
    }
    return undefined;
  }

  /** The nearest usable replica once it reaches `snap`, polled until the wait ends; undefined when it did not. */
  async #waitFor(tenantId: string, snap: Snap): Promise<ReplicaLink | undefined> {
    const until = Date.now() + this.#waitMs;
    while (Date.now() < until) {
      const r = this.#usable()[0];
      if (r === undefined) return undefined;
      await sleep(Math.min(this.#pollMs, Math.max(0, until - Date.now())));
      try {
        if ((await r.readHead(tenantId)) >= snap) return r;
      } catch {
        this.#failed(r);
      }
    }
    return undefined;
  }

  /** A read at `snap`: at a replica that has replayed it, else (and after a replica's error) at the primary. */
  async #read<T>(tenantId: string, snap: Snap, kind: string, run: (s: Store) => T | Promise<T>): Promise<T> {
    // a snap read at is one the primary committed: looks must answer at least it from now on
    this.#see(tenantId, snap);
    if (this.#replicas.length > 0) {
      let waited = false;
      let r = await this.#reached(tenantId, snap);
      if (r === undefined && this.#waitMs > 0) {
        r = await this.#waitFor(tenantId, snap);
        waited = r !== undefined;
      }
      if (r !== undefined) {
        try {
          const answer = await run(await r.store());
          this.#routed(kind, this.#replicas.indexOf(r), waited ? "waited" : undefined);
          return answer;
        } catch (e) {
          // an answer of ours (an expired snap token): the primary would give the same
          if (isPembaError(e) && e.code !== "ERROR_CODE_SQL_EXECUTION") throw e;
          this.#failed(r);
          this.#routed(kind, "primary", "error");
          return await run(this.inner);
        }
      }
    }
    this.#routed(kind, "primary", "behind");
    return await run(this.inner);
  }

  /**
   * A look at the tenant (its head, the feed after a snap): at a replica whose answer's head (`headOf`; undefined:
   * not there yet) is at least the tenant's known snap, else at the primary. The nearest replica is asked again
   * while the wait lasts.
   */
  async #look<T>(
    tenantId: string,
    kind: string,
    run: (s: Store) => T | Promise<T>,
    headOf: (answer: T) => Snap | undefined,
  ): Promise<T> {
    const need = this.#known.get(tenantId) ?? 0;
    const until = Date.now() + this.#waitMs;
    for (let round = 0; ; round++) {
      const usable = round === 0 ? this.#usable() : this.#usable().slice(0, 1);
      if (usable.length === 0) break;
      for (const r of usable) {
        try {
          const answer = await run(await r.store());
          const head = headOf(answer);
          if (head !== undefined) {
            r.noteHead(tenantId, head);
            if (head >= need) {
              this.#routed(kind, this.#replicas.indexOf(r), round > 0 ? "waited" : undefined);
              return answer;
            }
          }
        } catch {
          this.#failed(r);
        }
      }
      if (Date.now() >= until) break;
      await sleep(Math.min(this.#pollMs, Math.max(0, until - Date.now())));
    }
    const answer = await run(this.inner);
    const head = headOf(answer);
    if (head !== undefined) this.#see(tenantId, head);
    this.#routed(kind, "primary", "behind");
    return answer;
  }

  /** Every tenant's head: a replica's when each tenant's there is at least its known snap, else the primary's. */
  async #tenantHeads(primary: Database & TenantHeads): Promise<Map<string, Snap>> {
    for (const r of this.#usable()) {
      try {
        const s: Database = await r.store();
        if (!hasTenantHeads(s)) break;
        const heads = await s.tenantHeads();
        for (const [id, head] of heads) r.noteHead(id, head);
        const behind = [...this.#known].some(([id, snap]) => (heads.get(id) ?? -1) < snap);
        if (!behind) {
          this.#routed("tenant_heads", this.#replicas.indexOf(r));
          return heads;
        }
      } catch {
        this.#failed(r);
      }
    }
    const heads = await primary.tenantHeads();
    for (const [id, head] of heads) this.#see(id, head);
    this.#routed("tenant_heads", "primary", "behind");
    return heads;
  }

  // writes: the primary, each new snap seen

  override async write(tenantId: string, req: WriteRequest): Promise<Snap> {
    const snap = await this.inner.write(tenantId, req);
    this.#see(tenantId, snap);
    return snap;
  }

  // looks

  override headSnap(tenantId: string): Promise<Snap> {
    return this.#look(
      tenantId,
      "head_snap",
      (s) => s.headSnap(tenantId),
      (head) => head,
    );
  }

  override headSchema(tenantId: string): Promise<HeadSchemaRecord | undefined> {
    // no schema at a replica may be one it has not replayed yet: the primary answers that
    return this.#look(
      tenantId,
      "read_schema",
      (s) => s.headSchema(tenantId),
      (r) => r?.readAt,
    );
  }

  override changes(tenantId: string, after: Snap, limit: number): Promise<ChangeSet[]> {
    return this.#read(tenantId, this.#known.get(tenantId) ?? 0, "changes", (s) =>
      s.changes(tenantId, after, limit),
    );
  }

  override async readSchema(tenantId: string, version: string): Promise<SchemaRecord | undefined> {
    // a version never changes once written; one a replica lacks may not have reached it yet
    for (const r of this.#usable()) {
      try {
        const found = await (await r.store()).readSchema(tenantId, version);
        if (found !== undefined) {
          this.#routed("read_schema", this.#replicas.indexOf(r));
          return found;
        }
        break;
      } catch {
        this.#failed(r);
      }
    }
    this.#routed("read_schema", "primary", "behind");
    return this.inner.readSchema(tenantId, version);
  }

  // reads at a snap

  /**
   * A snap token's check (is `snap` older than the GC horizon?) at a replica that has reached the snap: its horizon
   * is at most the primary's, so a token it refuses the primary refuses too. One it accepts in the moment between a
   * garbage collection at the primary and the replica's replay of it reads what the replica still holds.
   */
  override assertSnapReadable(tenantId: string, snap: Snap): Promise<void> {
    return this.#read(tenantId, snap, "gc_horizon", (s) => s.assertSnapReadable(tenantId, snap));
  }

  override queryTuples(
    tenantId: string,
    snap: Snap,
    queries: TupleQuery[],
    at?: number,
  ): Promise<readonly Tuple[]> {
    return this.#read(tenantId, snap, "query_tuples", (s) => s.queryTuples(tenantId, snap, queries, at));
  }

  override querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at?: number,
  ): Promise<readonly Tuple[]> {
    return this.#read(tenantId, snap, "query_subject_tuples", (s) =>
      s.querySubjectTuples(tenantId, snap, queries, at),
    );
  }

  override queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at?: number,
  ): Promise<readonly Attribute[]> {
    return this.#read(tenantId, snap, "query_attributes", (s) =>
      s.queryAttributes(tenantId, snap, queries, at),
    );
  }

  override queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at?: number,
  ): Promise<[readonly Tuple[], readonly Attribute[]]> {
    return this.#read(tenantId, snap, "query_reads", (s) =>
      queryBoth(s, tenantId, snap, tuples, attributes, at),
    );
  }

  override listObjectIds(tenantId: string, snap: Snap, type: string, at?: number): Promise<string[]> {
    return this.#read(tenantId, snap, "list_object_ids", (s) => s.listObjectIds(tenantId, snap, type, at));
  }

  override readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
    at?: number,
  ): Promise<Page<Tuple>> {
    return this.#read(tenantId, snap, "read_tuples", (s) =>
      s.readTuples(tenantId, snap, filter, pageSize, cursor, at),
    );
  }

  override readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
    at?: number,
  ): Promise<Page<Attribute>> {
    return this.#read(tenantId, snap, "read_attributes", (s) =>
      s.readAttributes(tenantId, snap, filter, pageSize, cursor, at),
    );
  }

  override async close(): Promise<void> {
    await Promise.all(this.#replicas.map((r) => r.close().catch(() => {})));
    await super.close();
  }
}

/** A freshness look's head, unless the tenant is missing there (a replica may not have replayed its creation). */
const freshLook =
  (_tenantId: string) =>
  (f: Freshness): Snap | undefined =>
    f.tenantCreatedAt === undefined ? undefined : f.head;

function freshnessOf(store: Store): Store & FreshnessSource {
  const s: Database = store;
  if (!hasFreshness(s)) throw new Error(`a ${s.kind} store has no freshness look`);
  return s;
}

function rowCountsOf(store: Store): Store & RowCounts {
  const s: Database = store;
  if (!hasRowCounts(s)) throw new Error(`a ${s.kind} store has no row counts`);
  return s;
}
