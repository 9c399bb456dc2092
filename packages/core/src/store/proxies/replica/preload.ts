/**
 * Whole-tenant preloading, an option of the working-set replica (`preload`; `--replica-preload`,
 * PEMBA_REPLICA_PRELOAD): once a tenant is followed, its rows are read into the working set in the background, so
 * the checks of a small tenant find their keys held from the start instead of filling them one walk level at a time.
 *
 * - What it fills: the check keys (entity, relation) of every entity of every type of the tenant's head schema, with
 *   the type's relations (empty keys too: "no rows" is an answer worth holding), and the entities' attributes. The
 *   ids of a type come from one `listObjectIds` statement; then each step is ONE engine read of a batch of ids,
 *   sent through the replica's own read path (routing.ts): the keys it misses are filled exactly as a check's reads
 *   fill them (at the tenant's caught-up snap, with the change sets applied meanwhile laid onto the new entries), so
 *   preloading is exact under the change feed by the same rule as every fill. Lookups' keys (by subject) are not
 *   preloaded: they fill on demand.
 * - The budget: preloading stops for good (no eviction, no cliff) once the next step would take the working set past
 *   its byte budget, or a step evicted; the keys not preloaded fill on demand as before.
 * - It never holds a response: on the Node server the steps run on their own, a turn of the event loop between two;
 *   on the Worker they run as background work after a response (`ctx.waitUntil`, where each D1 round trip of
 *   background work first gives the runtime a timer turn), at most `stepsPerRun` steps (and never the request's
 *   last D1 queries) per response, and the next request of the tenant continues where the last stopped.
 * - A tenant forgotten (deleted, re-created, behind the GC horizon) drops its preload; following it again starts
 *   a new one.
 */
import { hasQueryBudget } from "../../capabilities.ts";
import type { AttributeQuery, Store, TupleQuery } from "../../store.ts";
import type { TenantFreshness, TenantState } from "./freshness.ts";

/** Ids per preload step (after a type's first, of one id): within one key list of a D1 statement (d1Dialect's 45). */
export const PRELOAD_BATCH = 40;
/** Steps per background run (the Worker): each is one or a few D1 queries, well inside 1,000 per invocation. */
export const PRELOAD_STEPS_PER_RUN = 50;
/** D1 queries a background run leaves to the request whose waitUntil it runs in. */
const QUERIES_KEPT = 100;

/** How a tenant's preload ended, or that it has not yet. */
export type PreloadEnd = "complete" | "budget" | "forgotten";

/** What a preload read: entity types and the keys each step asked for. */
export interface PreloadProgress {
  end?: PreloadEnd;
  /** Engine reads sent (batches of ids) and ids covered. */
  steps: number;
  ids: number;
}

/** An entity type's check keys: its relations and attributes. */
export interface PreloadTypeKeys {
  type: string;
  relations: string[];
  attributes: string[];
}

/**
 * The entity types a tenant's head schema (its text) declares, with their relations and attributes: the replica
 * stays below the schema language, so the wiring gives it this (service/preload-keys.ts).
 */
export type PreloadKeys = (schema: string) => PreloadTypeKeys[];

interface Cursor extends PreloadProgress {
  /** The head schema's types, once read. */
  plan?: PreloadTypeKeys[];
  /** Index in `plan` of the type being read, its ids (once listed) and the next id's index. */
  type: number;
  typeIds?: string[];
  offset: number;
  /** The run in progress, if any (one at a time per tenant), and whether one is scheduled to start. */
  running?: Promise<void>;
  scheduled?: boolean;
  /** The most bytes an id of the current type added to the working set so far (the next batch's estimate). */
  bytesPerId: number;
}

/** The replica's engine read that fills missing keys (its own queryTuplesAndAttributes at the caught-up snap). */
export type FillRead = (
  st: TenantState,
  tuples: TupleQuery[],
  attributes: AttributeQuery[],
) => Promise<unknown>;

export class TenantPreloads {
  private readonly cursors = new WeakMap<TenantState, Cursor>();
  private readonly inner: Store;
  private readonly freshness: TenantFreshness;
  private readonly read: FillRead;
  private readonly onEnd?: (st: TenantState, progress: PreloadProgress) => void;
  private readonly keysOf: PreloadKeys;

  constructor(
    keysOf: PreloadKeys,
    inner: Store,
    freshness: TenantFreshness,
    read: FillRead,
    onEnd?: (st: TenantState, progress: PreloadProgress) => void,
  ) {
    this.keysOf = keysOf;
    this.inner = inner;
    this.freshness = freshness;
    this.read = read;
    this.onEnd = onEnd;
  }

  /** The tenant's preload so far (undefined before its first step). */
  progress(st: TenantState): PreloadProgress | undefined {
    const c = this.cursors.get(st);
    return c === undefined ? undefined : { end: c.end, steps: c.steps, ids: c.ids };
  }

  /**
   * Whether the tenant's preload has steps left and no run is in progress or scheduled; when it has, a run is marked
   * scheduled (the caller starts it).
   */
  claim(st: TenantState): boolean {
    const c = this.cursor(st);
    if (c.end !== undefined || c.running !== undefined || c.scheduled === true) return false;
    c.scheduled = true;
    return true;
  }

  isRunning(st: TenantState): boolean {
    return this.cursors.get(st)?.running !== undefined;
  }

  /** Resolves once no run of the tenant's preload is in progress. */
  async whenIdle(st: TenantState): Promise<void> {
    for (let r = this.cursors.get(st)?.running; r !== undefined; r = this.cursors.get(st)?.running) {
      await r.catch(() => {});
    }
  }

  private cursor(st: TenantState): Cursor {
    let c = this.cursors.get(st);
    if (c === undefined) {
      c = { type: 0, offset: 0, steps: 0, ids: 0, bytesPerId: 0 };
      this.cursors.set(st, c);
    }
    return c;
  }

  /**
   * Runs up to `maxSteps` steps of the tenant's preload (from where the last run stopped), with `between` awaited
   * before each; answers how it stands.
   */
  async run(st: TenantState, maxSteps: number, between: () => Promise<void>): Promise<PreloadProgress> {
    const cursor = this.cursor(st);
    cursor.scheduled = false;
    if (cursor.running !== undefined) return this.progress(st)!;
    const work = (async () => {
      for (let n = 0; n < maxSteps && cursor.end === undefined; n++) {
        if (hasQueryBudget(this.inner) && this.inner.queriesLeft() < QUERIES_KEPT) break;
        await between();
        await this.step(st, cursor);
      }
    })();
    cursor.running = work;
    try {
      await work;
    } finally {
      cursor.running = undefined;
    }
    if (cursor.end !== undefined) this.onEnd?.(st, this.progress(st)!);
    return this.progress(st)!;
  }

  /** One round trip: the head schema, a type's ids, or the keys of a batch of ids. */
  private async step(st: TenantState, c: Cursor): Promise<void> {
    if (this.freshness.state(st.id) !== st) {
      c.end = "forgotten";
      return;
    }
    const budget = this.freshness.budget;
    if (c.plan === undefined) {
      const head = await this.inner.headSchema(st.id);
      c.plan =
        head === undefined
          ? []
          : this.keysOf(head.schema).filter((p) => p.relations.length + p.attributes.length > 0);
      return;
    }
    const plan = c.plan[c.type];
    if (plan === undefined) {
      c.end = "complete";
      return;
    }
    if (c.typeIds === undefined) {
      c.typeIds = await this.inner.listObjectIds(st.id, st.caughtUp, plan.type);
      c.offset = 0;
      c.bytesPerId = 0;
      return;
    }
    // a type's first step reads one id: what it adds is the estimate for the type's batches
    const ids = c.typeIds.slice(c.offset, c.offset + (c.offset === 0 ? 1 : PRELOAD_BATCH));
    if (ids.length === 0) {
      c.type++;
      c.typeIds = undefined;
      return;
    }
    const before = budget.bytes;
    const evictions = budget.evictions;
    // stop before a step that would evict, by the type's largest bytes per id so far
    if (before + c.bytesPerId * ids.length > budget.maxBytes) {
      c.end = "budget";
      return;
    }
    const tuples: TupleQuery[] =
      plan.relations.length === 0
        ? []
        : [{ entityType: plan.type, entityIds: ids, relations: plan.relations }];
    const attributes: AttributeQuery[] =
      plan.attributes.length === 0
        ? []
        : [{ entityType: plan.type, entityIds: ids, attributes: plan.attributes }];
    await this.read(st, tuples, attributes);
    c.steps++;
    c.ids += ids.length;
    c.offset += ids.length;
    c.bytesPerId = Math.max(c.bytesPerId, (budget.bytes - before) / ids.length);
    if (budget.evictions > evictions) c.end = "budget";
  }
}
