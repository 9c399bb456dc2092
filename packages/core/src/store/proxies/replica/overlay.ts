/**
 * Reads the lazy replica sends to a replicated database (D1): a fresh snap token's reads of a tenant it does not
 * follow, and the reads that fill its working set at the snap it is caught up to (which the request's own session may
 * not have reached), at the request's NEAREST replica with the primary's changes laid over the rows, so they cost at
 * most ONE round trip to the primary instead of one per walk level:
 *
 * 1. The look at the nearest replica (NearestReplica: the request's session there, whatever its token's bookmark):
 *    its head R. When R >= the token's snap, the replica has the write: every read goes there, nothing laid over.
 * 2. Else ONE statement batch in the request's own session (at a database that has the token's write: the primary
 *    while no replica has it): the look (head H >= the token, GC horizon, head schema) and the tenant's change feed
 *    after R (`freshnessAndChanges`, the same read a loaded copy catches up with).
 * 3. Each read at snap S <= H goes to the nearest replica at S, and the change sets of (R, S] are laid over its rows:
 *    the rows and the sets are applied, in that order, to a scratch MemoryStore, which then answers the same read
 *    (one definition of what a change does: the copy's own `applyChangeSet`).
 *
 * Exact because a read at snap S at a database at position P sees the state at min(P, S) (rows carry their
 * created/deleted transaction), P >= R (the session's reads never go back), and a change is idempotent given the
 * ones after it: re-applying changes of (R, P] the replica already has leaves every row as the last change of (R, S]
 * left it. Not laid over (the reads go to the request's own session, as before): a GC horizon past R (the feed
 * skips what it collected), a tenant created again since R, a look that did not reach the token, and
 * `listObjectIds` (ids carry no rows to lay changes over).
 */
import type { Attribute, Tuple } from "../../../model.ts";
import type { Freshness, FreshnessSource, NearestReplica, ReplicaReads } from "../../capabilities.ts";
import { MemoryStore } from "../../memory/memory-store.ts";
import type { ChangeSet, DataChange, MaybePromise, Snap } from "../../store.ts";

/** What one request laid over one tenant: the nearest replica's reads, and the primary's changes after `from`. */
export interface Overlay {
  reads: ReplicaReads;
  /** The nearest replica's head at the look: its reads see at least this. */
  from: Snap;
  /** The newest snap the sets reach (the primary's head at the look): reads above it are not laid over. */
  upTo: Snap;
  /** The change sets of (from, upTo], in snap order. */
  sets: ChangeSet[];
}

/**
 * The database behind the lazy replica: its nearest replica, the look and feed in the request's session, and the
 * store reading in the request's session (`session`).
 */
export type OverlaySource = NearestReplica &
  Required<Pick<FreshnessSource, "freshnessAndChanges">> & { session: ReplicaReads };

/** The fresh token's looks, and the overlays they set up, per request (weakly) and tenant. */
export class NearestOverlays {
  private readonly source: OverlaySource;
  private readonly byRequest = new WeakMap<object, Map<string, Overlay>>();

  constructor(source: OverlaySource) {
    this.source = source;
  }

  /**
   * Steps 1 and 2 for a read at `snap`. Answers the look to report (the head schema at a snap >= the token, the GC
   * horizon). With `feedFrom` (a tenant the replica follows, caught up to `feedFrom`), the looks also read the
   * tenant's change feed after it, so the same round trips catch the tenant up (`feed`: the change sets after
   * `feedFrom` up to the look's head): at the nearest replica when it has the token's write (no primary round
   * trip), else the primary's sets after the replica's head complete them (ONE primary round trip).
   */
  async look(tenantId: string, snap: Snap, feedFrom?: Snap): Promise<Freshness & { feed?: ChangeSet[] }> {
    const { request, store: reads } = this.source.nearestReplica();
    let near: Freshness;
    let nearSets: ChangeSet[] = [];
    if (feedFrom !== undefined && reads.freshnessAndChanges !== undefined) {
      const read = await reads.freshnessAndChanges(tenantId, feedFrom);
      near = read.freshness;
      nearSets = read.changes;
    } else near = await reads.freshness(tenantId);
    let overlay: Overlay | undefined;
    let seen: Freshness & { feed?: ChangeSet[] } = near;
    if (near.head >= snap) {
      overlay = { reads, from: near.head, upTo: near.head, sets: [] };
      if (feedFrom !== undefined) seen = { ...near, feed: nearSets };
    } else {
      const { freshness: f, changes } = await this.source.freshnessAndChanges(tenantId, near.head);
      seen = f;
      const exact =
        f.head >= snap &&
        f.horizon <= near.head &&
        f.tenantCreatedAt !== undefined &&
        f.tenantCreatedAt === near.tenantCreatedAt;
      if (exact) overlay = { reads, from: near.head, upTo: f.head, sets: changes };
      // the replica's sets after feedFrom (none when it is older than feedFrom), then the primary's after its head
      if (feedFrom !== undefined && f.tenantCreatedAt === near.tenantCreatedAt) {
        seen = {
          ...f,
          feed: [...nearSets, ...changes.filter((c) => c.snap > Math.max(near.head, feedFrom))],
        };
      }
    }
    this.set(request, tenantId, overlay);
    return seen;
  }

  /**
   * A look the request's own session made (its head `head`): that session's later reads see the database at least
   * at `head`, so the request's reads at snaps up to it go there, with nothing to lay over and no look of their own.
   */
  sessionSaw(tenantId: string, head: Snap): void {
    const { request } = this.source.nearestReplica();
    const had = this.byRequest.get(request)?.get(tenantId);
    if (had !== undefined && had.upTo >= head) return;
    this.set(request, tenantId, { reads: this.source.session, from: head, upTo: head, sets: [] });
  }

  private set(request: object, tenantId: string, overlay: Overlay | undefined): void {
    let tenants = this.byRequest.get(request);
    if (overlay !== undefined) {
      if (tenants === undefined) {
        tenants = new Map();
        this.byRequest.set(request, tenants);
      }
      tenants.set(tenantId, overlay);
    } else tenants?.delete(tenantId);
  }

  /**
   * The current request's overlay of the tenant for a read at `snap`, looking (steps 1 and 2) when the request has
   * none yet; `heard` gets the look. Undefined when the reads cannot be laid over (they go to the request's session).
   */
  prepare(tenantId: string, snap: Snap, heard: (f: Freshness) => void): MaybePromise<Overlay | undefined> {
    const overlay = this.at(tenantId, snap);
    if (overlay !== undefined) return overlay;
    return this.look(tenantId, snap).then((f) => {
      heard(f);
      return this.at(tenantId, snap);
    });
  }

  /** The current request's overlay of the tenant for a read at `snap`, if it set one up. */
  at(tenantId: string, snap: Snap): Overlay | undefined {
    const overlay = this.byRequest.get(this.source.nearestReplica().request)?.get(tenantId);
    return overlay !== undefined && snap <= overlay.upTo ? overlay : undefined;
  }
}

const created = (rows: { tuples?: readonly Tuple[]; attributes?: readonly Attribute[] }): DataChange[] => {
  const out: DataChange[] = [];
  for (const tuple of rows.tuples ?? []) out.push({ operation: "OPERATION_CREATE", tuple });
  for (const attribute of rows.attributes ?? []) out.push({ operation: "OPERATION_CREATE", attribute });
  return out;
};

/**
 * Step 3: `read` at the nearest replica at `snap`, then the same read (`again`) of a scratch copy holding its rows
 * with the sets of (from, snap] applied; `rows` names the rows a result holds.
 */
export function laidOver<T>(
  overlay: Overlay,
  tenantId: string,
  snap: Snap,
  read: (reads: ReplicaReads) => MaybePromise<T>,
  rows: (result: T) => { tuples?: readonly Tuple[]; attributes?: readonly Attribute[] },
  again: (scratch: MemoryStore, snap: Snap) => MaybePromise<T>,
): MaybePromise<T> {
  const sets = overlay.sets.filter((s) => s.snap <= snap);
  const result = read(overlay.reads);
  if (sets.length === 0) return result;
  const apply = (r: T): MaybePromise<T> => {
    const scratch = new MemoryStore();
    let at = 1;
    scratch.applyChangeSet(tenantId, { snap: at, changes: created(rows(r)) });
    for (const set of sets) scratch.applyChangeSet(tenantId, { snap: ++at, changes: set.changes });
    return again(scratch, at);
  };
  return result instanceof Promise ? result.then(apply) : apply(result);
}
