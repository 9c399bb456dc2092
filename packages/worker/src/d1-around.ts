/**
 * Work put around a D1 binding's round trips (one `all()` or one `batch()`), for every database the Worker binds:
 *
 * - `yieldingInBackground`: a round trip of background work (a replica load the response started, run under
 *   ctx.waitUntil) first gives the runtime one timer turn. Under `wrangler dev`, the local D1 database runs in the
 *   Worker's own workerd process and thread, and each of its answers is ready at once: a chain of such round trips
 *   never lets the event loop poll its sockets, so a response already handed to the runtime stays unsent until the
 *   chain ends. A timer turn lets the loop poll between the chain's steps.
 * - `simulatedD1` (PEMBA_D1_SIMULATE, for benchmarks and tests): each round trip waits the latency of the D1
 *   instance that would answer it on Cloudflare, by D1's routing rules: a session started `first-unconstrained`
 *   reads at a replica, `first-primary` (and the binding used without a session) at the primary, a write always at
 *   the primary and the session stays there; a session started from a bookmark reads at a replica once the
 *   bookmark's write has reached the replicas (after the lag drawn for it), else at the primary. The data is the
 *   one local database's: the lag changes where a read goes and what it waits, not what it reads (reads of an older
 *   replica are tested against two databases in test/workerd/d1-sessions.test.ts).
 */
import type { D1Database, D1DatabaseSession, D1PreparedStatement, D1Result, D1Simulation } from "@pemba/core";

/** One round trip: its statements' SQL, whether it writes, and the session (or binding) that sends it. */
export interface RoundTrip {
  sql: readonly string[];
  writes: boolean;
  via: Via;
}

/** A session's state as the wrapper keeps it: how it started (undefined: the binding itself), and what `around` keeps. */
export interface Via {
  readonly start: string | undefined;
  /** The session's bookmark now (null before its first query, and for the binding itself). */
  bookmark(): string | null;
  atPrimary?: boolean;
}

export type Around = (trip: RoundTrip, run: () => Promise<D1Result[]>) => Promise<D1Result[]>;

const isRead = (sql: string) => /^\s*(SELECT|WITH)\b/i.test(sql);

class Statement implements D1PreparedStatement {
  readonly #over: Queryable;
  readonly sql: string;
  readonly inner: D1PreparedStatement;

  constructor(over: Queryable, sql: string, inner: D1PreparedStatement) {
    this.#over = over;
    this.sql = sql;
    this.inner = inner;
  }

  bind(...values: unknown[]): D1PreparedStatement {
    return new Statement(this.#over, this.sql, this.inner.bind(...values));
  }

  async all(): Promise<D1Result> {
    const [result] = await this.#over.send([this], () => this.inner.all().then((r) => [r]));
    return result!;
  }
}

class Queryable implements Pick<D1Database, "prepare" | "batch"> {
  protected readonly inner: Pick<D1Database, "prepare" | "batch">;
  readonly #around: Around;
  readonly #via: Via;

  constructor(inner: Pick<D1Database, "prepare" | "batch">, around: Around, via: Via) {
    this.inner = inner;
    this.#around = around;
    this.#via = via;
  }

  prepare(sql: string): D1PreparedStatement {
    return new Statement(this, sql, this.inner.prepare(sql));
  }

  batch(statements: D1PreparedStatement[]): Promise<D1Result[]> {
    const own = statements as Statement[];
    return this.send(own, () => this.inner.batch(own.map((s) => s.inner)));
  }

  send(statements: Statement[], run: () => Promise<D1Result[]>): Promise<D1Result[]> {
    const sql = statements.map((s) => s.sql);
    return this.#around({ sql, writes: !sql.every(isRead), via: this.#via }, run);
  }
}

class Session extends Queryable implements D1DatabaseSession {
  getBookmark(): string | null {
    return (this.inner as D1DatabaseSession).getBookmark();
  }
}

class Database extends Queryable implements D1Database {
  readonly #around: Around;

  constructor(inner: D1Database, around: Around) {
    super(inner, around, { start: undefined, bookmark: () => null });
    this.#around = around;
  }

  withSession(constraintOrBookmark?: string): D1DatabaseSession {
    const inner = (this.inner as D1Database).withSession(constraintOrBookmark);
    return new Session(inner, this.#around, {
      start: constraintOrBookmark ?? "first-unconstrained",
      bookmark: () => inner.getBookmark(),
    });
  }
}

/** `db` with `around` run around each of its round trips (its own and its sessions'). */
export function aroundD1(db: D1Database, around: Around): D1Database {
  return new Database(db, around);
}

/** One turn of the runtime's timers: the event loop polls its sockets (and sends what waits there) first. */
export const timerTurn = () => new Promise<void>((done) => setTimeout(done, 0));

/** Round trips of background work (`inBackground()` true) wait one timer turn first. */
export function yieldingInBackground(inBackground: () => boolean): Around {
  return async (_trip, run) => {
    if (inBackground()) await timerTurn();
    return run();
  };
}

/** What a simulated binding has sent, for the request log's figures. */
export interface SimulatedTrip {
  at: "replica" | "primary";
  ms: number;
}

/**
 * Round trips that wait D1's latency (see the file's comment). `observe` hears where each one went. `random` draws
 * each write's lag in [lagMinMs, lagMaxMs].
 */
export function simulatedD1(
  sim: D1Simulation,
  observe?: (trip: SimulatedTrip) => void,
  random: () => number = Math.random,
): Around {
  /** When each bookmark's write reaches the replicas (ms, Date.now()). */
  const visibleAt = new Map<string, number>();
  /** Writes reach the replicas in commit order: the last one's arrival. */
  let lastVisibleAt = 0;
  const atPrimary = (trip: RoundTrip): boolean => {
    const via = trip.via;
    if (trip.writes) return true;
    if (via.atPrimary !== undefined) return via.atPrimary;
    const start = via.start;
    if (start === undefined || start === "first-primary") return true;
    if (start === "first-unconstrained") return false;
    // a bookmark: at a replica once its write has arrived there (a read's bookmark is never newer than a write's)
    return (visibleAt.get(start) ?? 0) > Date.now();
  };
  return async (trip, run) => {
    const primary = atPrimary(trip);
    // a session stays where it started, and at the primary after a write
    if (trip.via.start !== undefined) trip.via.atPrimary = primary;
    const ms = primary ? sim.primaryMs : sim.replicaMs;
    if (ms > 0) await new Promise((done) => setTimeout(done, ms));
    const results = await run();
    observe?.({ at: primary ? "primary" : "replica", ms });
    if (trip.writes) {
      const lag = sim.lagMinMs + random() * (sim.lagMaxMs - sim.lagMinMs);
      lastVisibleAt = Math.max(lastVisibleAt, Date.now() + lag);
    }
    // the session's bookmark after a write (and after its later reads, which a snap token may carry)
    const bookmark = trip.via.bookmark();
    if (bookmark !== null && trip.via.atPrimary === true && !visibleAt.has(bookmark)) {
      visibleAt.set(bookmark, lastVisibleAt);
    }
    return results;
  };
}
