/**
 * The change feed as streams of transactions. A stream reads the change sets after its position until it is
 * caught up, then waits for its tenant's poller: ONE poll of the store per tenant (and poll interval) every `pollMs`
 * feeds every stream waiting on that tenant, so idle streams cost no store calls of their own. The number of open
 * streams is capped (`maxStreams`); one over it is refused with RATE_LIMITED before anything is streamed. `close`
 * ends them all (server shutdown).
 *
 * On a store capped per request (D1: 1000 queries per Worker invocation, `Store.queriesLeft`), a stream ends
 * cleanly, after its last full batch, when its request has no query left for the next read or poll: the client
 * reconnects with the last batch's snap token and misses nothing.
 */
import { PembaError } from "../errors.ts";
import { hasWriteNotices } from "../store/capabilities.ts";
import type { DataChange, Snap, Store } from "../store/store.ts";
import { encodeSnapToken } from "./snap-token.ts";

export interface WatchBatch {
  snapToken: string;
  changes: DataChange[];
}

export interface WatchOptions {
  signal?: AbortSignal;
  /** Poll interval of the tenant's poller (default 250 ms). */
  pollMs?: number;
  /** Change sets per read (default 100). */
  batch?: number;
}

/** A caught-up stream waiting for a change set after `after`. */
interface Waiter {
  readonly after: Snap;
  wake(): void;
}

interface Poller {
  readonly tenantId: string;
  readonly pollMs: number;
  readonly waiters: Set<Waiter>;
  timer: ReturnType<typeof setTimeout> | undefined;
  polling: boolean;
}

/** Statements one `Store.changes` read sends at most (the SQL stores: the transactions, then their rows). */
const QUERIES_PER_READ = 2;

/** Default cap of the watch streams open at once (`maxStreams`). */
export const DEFAULT_MAX_WATCH_STREAMS = 1000;

export class WatchHub {
  readonly #store: Store;
  readonly #maxStreams: number;
  readonly #pollers = new Map<string, Poller>();
  /** One per open stream: aborted by the stream's own signal or by `close`. */
  readonly #open = new Set<AbortController>();
  #closed = false;
  /** Store reads made by the pollers (for tests). */
  polls = 0;

  /** Deletes the tenant's expired rows when one is due (PembaService.sweepExpired), before a poll reads. */
  readonly #sweep: ((tenantId: string) => Promise<unknown>) | undefined;

  constructor(
    store: Store,
    opts: { maxStreams?: number; sweep?: (tenantId: string) => Promise<unknown> } = {},
  ) {
    this.#store = store;
    this.#maxStreams = opts.maxStreams ?? DEFAULT_MAX_WATCH_STREAMS;
    this.#sweep = opts.sweep;
    // a store that hears of every committed write (PostgreSQL's notices) wakes the tenant's waiting streams at once;
    // the pollers stay as the fallback for a lost notice
    if (hasWriteNotices(store)) void store.onWrite((tenantId, snap) => this.#notice(tenantId, snap));
  }

  /** A committed write of `tenantId` at `snap`: the tenant's streams waiting before it read now. */
  #notice(tenantId: string, snap: Snap): void {
    for (const p of this.#pollers.values()) {
      if (p.tenantId !== tenantId) continue;
      for (const w of [...p.waiters]) if (w.after < snap) w.wake();
    }
  }

  /** Streams open now. */
  get streams(): number {
    return this.#open.size;
  }

  /** Ends every open stream (each finishes after the batch it is sending) and every later one at once: shutdown. */
  close(): void {
    this.#closed = true;
    for (const stream of this.#open) stream.abort();
  }

  /**
   * Each change set with snap > `after`, oldest first, one batch per transaction, until `signal` aborts (or the
   * generator is returned). Throws RATE_LIMITED at once when `maxStreams` streams are open.
   */
  open(tenantId: string, after: Snap, opts: WatchOptions = {}): AsyncGenerator<WatchBatch> {
    if (this.#open.size >= this.#maxStreams)
      throw new PembaError("ERROR_CODE_RATE_LIMITED", `too many watch streams (limit ${this.#maxStreams})`);
    const stream = new AbortController();
    this.#open.add(stream);
    const close = () => {
      this.#open.delete(stream);
      stream.abort();
    };
    if (opts.signal?.aborted || this.#closed) close();
    else opts.signal?.addEventListener("abort", close, { once: true });
    stream.signal.addEventListener("abort", close, { once: true });
    return this.#stream(tenantId, after, { ...opts, signal: stream.signal }, close);
  }

  async *#stream(
    tenantId: string,
    after: Snap,
    opts: WatchOptions,
    close: () => void,
  ): AsyncGenerator<WatchBatch> {
    const database = this.#store.snapDatabase?.(tenantId);
    try {
      while (!opts.signal?.aborted && this.#canRead()) {
        let sets: Awaited<ReturnType<Store["changes"]>>;
        try {
          sets = await this.#store.changes(tenantId, after, opts.batch ?? 100);
        } catch (e) {
          // the database cannot be reached (down, restarting): the stream stays open and reads again at the next
          // poll, so it goes on from where it was once the database is back
          if (!(e instanceof PembaError && e.grpcCode === 14)) throw e;
          await this.#wait(tenantId, opts.pollMs ?? 250, after, opts.signal);
          continue;
        }
        for (const set of sets) {
          after = set.snap;
          yield { snapToken: encodeSnapToken(set.snap, undefined, database), changes: set.changes };
        }
        if (sets.length === 0) await this.#wait(tenantId, opts.pollMs ?? 250, after, opts.signal);
      }
    } finally {
      close();
    }
  }

  /** False when the current request's query budget (D1) has no read left: the stream ends instead of failing. */
  #canRead(queries = QUERIES_PER_READ): boolean {
    return (this.#store.queriesLeft?.() ?? Number.POSITIVE_INFINITY) >= queries;
  }

  /** Resolves when the tenant's poller sees a change set after `after`, or when `signal` aborts. */
  #wait(tenantId: string, pollMs: number, after: Snap, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    const key = `${pollMs}\u0000${tenantId}`;
    let poller = this.#pollers.get(key);
    if (poller === undefined) {
      poller = { tenantId, pollMs, waiters: new Set(), timer: undefined, polling: false };
      this.#pollers.set(key, poller);
    }
    const p = poller;
    return new Promise((resolve) => {
      const waiter: Waiter = {
        after,
        wake() {
          p.waiters.delete(waiter);
          signal?.removeEventListener("abort", waiter.wake);
          resolve();
        },
      };
      p.waiters.add(waiter);
      signal?.addEventListener("abort", waiter.wake, { once: true });
      this.#schedule(key, p);
    });
  }

  #schedule(key: string, p: Poller): void {
    if (p.timer !== undefined || p.polling) return;
    p.timer = setTimeout(() => void this.#poll(key, p), p.pollMs);
  }

  /** One read for every waiter of the tenant: the first change set after the oldest waiter's position. */
  async #poll(key: string, p: Poller): Promise<void> {
    p.timer = undefined;
    if (p.waiters.size > 0 && !this.#canRead()) {
      // the request whose timer this is has used its queries: each stream reads (or ends) on its own budget
      for (const w of [...p.waiters]) w.wake();
    } else if (p.waiters.size > 0) {
      let oldest = Number.POSITIVE_INFINITY;
      for (const w of p.waiters) if (w.after < oldest) oldest = w.after;
      p.polling = true;
      try {
        // an expiry that took effect becomes a delete in the feed (one statement when none is due)
        if (this.#sweep !== undefined && this.#canRead(QUERIES_PER_READ + 2)) await this.#sweep(p.tenantId);
        this.polls++;
        const sets = await this.#store.changes(p.tenantId, oldest, 1);
        if (sets.length > 0) for (const w of [...p.waiters]) if (w.after < sets[0].snap) w.wake();
      } catch {
        // each stream's own read reports the error
        for (const w of [...p.waiters]) w.wake();
      } finally {
        p.polling = false;
      }
    }
    if (p.waiters.size === 0) this.#pollers.delete(key);
    else this.#schedule(key, p);
  }
}
