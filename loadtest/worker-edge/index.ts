/**
 * The Worker of loadtest/bench-edge.ts: Pemba's Worker with its D1 binding wrapped so that every D1 round trip takes
 * what it takes on Cloudflare (wrangler.toml's EDGE_* vars), and with per-request D1 figures in response headers.
 *
 * - A round trip (one `all()` or one `batch()`) waits EDGE_REPLICA_MS when a replica answers it, EDGE_PRIMARY_MS when
 *   the primary does. D1's routing rules decide which: a session started `first-unconstrained` reads at a replica,
 *   `first-primary` (and a binding used without a session) at the primary, a write always at the primary and the
 *   session stays there; a session started from a bookmark reads at the replica once the replica has the
 *   bookmark's write, else at the primary.
 * - Two local databases: DB is the primary, REPLICA the replica, which replays the primary's write batches in
 *   order once each one's lag (uniform in [EDGE_LAG_MIN_MS, EDGE_LAG_MAX_MS]) has passed, at the start of a request
 *   (outside its timing: local work, not D1's latency; a replay inside a request's own reads would await a promise
 *   of another request, which workerd refuses), with the tenants' created_at copied from the primary (D1 replicates
 *   values, a replay recomputes them). So a replica's answer IS older while a write lags: staleness is what the
 *   bench checks end to end (a read with a fresh write's token must see the write). GET /__edge/flush replays
 *   every write left (bench-edge.ts, before a process ends: the queue lives in the isolate).
 * - Response headers: x-edge-d1 (round trips), x-edge-primary (of them at the primary), x-edge-rows (rows read, as
 *   D1 reports them); GET /__edge/stats: totals of the isolate, including work kept alive by ctx.waitUntil
 *   (background loads) and how many such promises are pending. GET /healthz answers without Pemba, so the
 *   first check of an isolate sends the isolate's first D1 round trips, as on Cloudflare.
 * - Pemba's handlers are created at module evaluation over the module's env (with DB wrapped), as the deployed
 *   module does: what createWorker builds then is not part of any request's time.
 */

import { env as moduleEnv } from "cloudflare:workers";
import { AsyncLocalStorage } from "node:async_hooks";
import type { D1Database, D1DatabaseSession, D1PreparedStatement, D1Result } from "@pemba/core";
import { createWorker, type WorkerEnv, type WorkerExecutionContext } from "@pemba/worker/handler";

interface EdgeEnv extends WorkerEnv {
  DB: D1Database;
  REPLICA: D1Database;
  EDGE_REPLICA_MS: string;
  EDGE_PRIMARY_MS: string;
  EDGE_LAG_MIN_MS: string;
  EDGE_LAG_MAX_MS: string;
}

interface Figures {
  d1: number;
  primary: number;
  rows: number;
  /** Per-request figures only: each round trip, in order. */
  trips?: Trip[];
}

/** One D1 round trip: where it went, the latency added, its statements (SQL, abridged) and when (ms into the request). */
export interface Trip {
  at: "replica" | "primary";
  ms: number;
  sql: string[];
  start: number;
  end: number;
  rows: number;
}

interface Latency {
  replicaMs: number;
  primaryMs: number;
  lagMinMs: number;
  lagMaxMs: number;
}

const figures = new AsyncLocalStorage<Figures & { began: number }>();
/** A statement as the trip log shows it: its first words and the tables it names. */
const abridged = (sql: string) => {
  const text = sql.replace(/\s+/g, " ").trim();
  const tables = [...new Set(text.match(/\b(?:FROM|INTO|UPDATE|JOIN) "?(\w+)"?/gi) ?? [])]
    .map((m) => m.split(/\s+/)[1]!.replaceAll('"', ""))
    .join(",");
  return `${text.slice(0, 24)}… [${tables}]`;
};
const totals: Figures & { pending: number; started: number; settled: number } = {
  d1: 0,
  primary: 0,
  rows: 0,
  pending: 0,
  started: 0,
  settled: 0,
};
/** A primary's write batch the replica replays once `at` (Date.now() ms) has passed. */
interface Replicated {
  statements: { sql: string; params: unknown[] }[];
  at: number;
  replayed: boolean;
}

/** Each write's bookmark (and its session's later ones): the write, replayed at the replica or not yet. */
const writeOf = new Map<string, Replicated>();
/** The primary's write batches the replica has not replayed yet, in commit order. */
const unreplicated: Replicated[] = [];
/** When the last write reaches the replica: replication keeps the primary's order. */
let lastVisibleAt = 0;
/** A replay runs (in some request's context: workerd refuses a promise of one request awaited by another). */
let replaying = false;

/**
 * Replays the write batches whose lag has passed (`all`: every one) on the replica database, in order. While one
 * replay runs, another call returns at once: the running one takes the batches queued meanwhile too.
 */
async function replicate(replica: D1Database, primary: D1Database, all = false): Promise<void> {
  if (replaying) return;
  replaying = true;
  try {
    let tenants = false;
    while (unreplicated.length > 0 && (all || unreplicated[0]!.at <= Date.now())) {
      const write = unreplicated[0]!;
      await replica.batch(write.statements.map((s) => replica.prepare(s.sql).bind(...s.params)));
      write.replayed = true;
      unreplicated.shift();
      tenants ||= write.statements.some((s) => /tenants/i.test(s.sql));
    }
    if (!tenants) return;
    const { results } = await primary.prepare("SELECT id, created_at FROM tenants").all();
    if (results.length === 0) return;
    await replica.batch(
      results.map((r) =>
        replica.prepare("UPDATE tenants SET created_at = ? WHERE id = ?").bind(r.created_at, r.id),
      ),
    );
  } finally {
    replaying = false;
  }
}
const isRead = (sql: string) => /^\s*(SELECT|WITH)\b/i.test(sql);
const sleep = (ms: number) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : undefined);

/** The two databases and the latencies. */
interface Databases {
  primary: D1Database;
  replica: D1Database;
  latency: Latency;
}

class Session implements D1DatabaseSession {
  #atPrimary: boolean;
  /** This session's last write. */
  #wrote: Replicated | undefined;
  readonly #inner: D1DatabaseSession | D1Database;
  readonly #dbs: Databases;

  constructor(inner: D1DatabaseSession | D1Database, atPrimary: boolean, dbs: Databases) {
    this.#inner = inner;
    this.#atPrimary = atPrimary;
    this.#dbs = dbs;
  }

  prepare(sql: string): D1PreparedStatement {
    return new Statement(this, sql, []);
  }

  batch(statements: D1PreparedStatement[]): Promise<D1Result[]> {
    return this.run(statements as Statement[]);
  }

  getBookmark(): string | null {
    return "getBookmark" in this.#inner ? this.#inner.getBookmark() : null;
  }

  async run(statements: Statement[]): Promise<D1Result[]> {
    const sqls = statements.map((s) => s.sql);
    const writes = sqls.some((sql) => !isRead(sql));
    if (writes) this.#atPrimary = true;
    const { latency, primary, replica } = this.#dbs;
    const atPrimary = this.#atPrimary;
    const f = figures.getStore();
    const start = f === undefined ? 0 : performance.now() - f.began;
    await sleep(atPrimary ? latency.primaryMs : latency.replicaMs);
    let results: D1Result[];
    if (atPrimary) {
      const inner = this.#inner;
      results = await inner.batch(statements.map((s) => inner.prepare(s.sql).bind(...s.params)));
    } else {
      results = await replica.batch(statements.map((s) => replica.prepare(s.sql).bind(...s.params)));
    }
    const rows = results.reduce((n, r) => n + (r.meta?.rows_read ?? 0), 0);
    f?.trips?.push({
      at: atPrimary ? "primary" : "replica",
      ms: atPrimary ? latency.primaryMs : latency.replicaMs,
      sql: sqls,
      start: Math.round(start * 10) / 10,
      end: Math.round((performance.now() - f.began) * 10) / 10,
      rows,
    });
    for (const target of f === undefined ? [totals] : [totals, f]) {
      target.d1++;
      if (this.#atPrimary) target.primary++;
      target.rows += rows;
    }
    if (writes) {
      const lag = latency.lagMinMs + Math.random() * (latency.lagMaxMs - latency.lagMinMs);
      lastVisibleAt = Math.max(lastVisibleAt, Date.now() + lag);
      this.#wrote = {
        statements: statements.map((s) => ({ sql: s.sql, params: s.params })),
        at: lastVisibleAt,
        replayed: false,
      };
      unreplicated.push(this.#wrote);
      // no lag (seeding): at once, so the queue never holds a whole dataset
      if (lastVisibleAt <= Date.now()) await replicate(replica, primary);
    }
    // the session's bookmark after its write (and after its reads that follow, e.g. a replica's catch-up at the
    // primary: a snap token carries the latest) reaches the replica with that write
    const bookmark = this.getBookmark();
    if (this.#wrote !== undefined && bookmark !== null) writeOf.set(bookmark, this.#wrote);
    return results;
  }
}

class Statement implements D1PreparedStatement {
  readonly session: Session;
  readonly sql: string;
  readonly params: unknown[];

  constructor(session: Session, sql: string, params: unknown[]) {
    this.session = session;
    this.sql = sql;
    this.params = params;
  }

  bind(...values: unknown[]): D1PreparedStatement {
    return new Statement(this.session, this.sql, values);
  }

  async all(): Promise<D1Result> {
    const [result] = await this.session.run([this]);
    return result!;
  }
}

function latencyD1(dbs: Databases): D1Database {
  const db = dbs.primary;
  const direct = new Session(db, true, dbs);
  return {
    prepare: (sql) => direct.prepare(sql),
    batch: (statements) => direct.batch(statements),
    withSession(start = "first-unconstrained") {
      const inner = db.withSession(start);
      if (start === "first-primary") return new Session(inner, true, dbs);
      if (start === "first-unconstrained") return new Session(inner, false, dbs);
      // a bookmark: the replica has it once its write is replayed (bookmarks of reads are never newer)
      const write = writeOf.get(start);
      return new Session(inner, write !== undefined && !write.replayed, dbs);
    },
  };
}

let wrapped: { source: EdgeEnv; env: EdgeEnv } | undefined;

function edgeEnv(env: EdgeEnv): EdgeEnv {
  if (wrapped?.source !== env) {
    const latency: Latency = {
      replicaMs: Number(env.EDGE_REPLICA_MS),
      primaryMs: Number(env.EDGE_PRIMARY_MS),
      lagMinMs: Number(env.EDGE_LAG_MIN_MS),
      lagMaxMs: Number(env.EDGE_LAG_MAX_MS),
    };
    wrapped = {
      source: env,
      env: { ...env, DB: latencyD1({ primary: env.DB, replica: env.REPLICA, latency }) },
    };
  }
  return wrapped.env;
}

// as the deployed module (packages/worker/src/index.ts) does, over the module's env: the D1 binding wrapped
const pemba = createWorker(edgeEnv(moduleEnv as unknown as EdgeEnv));

export default {
  async fetch(request: Request, env: EdgeEnv, ctx: WorkerExecutionContext): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === "/healthz") return new Response("ok");
    if (path === "/__edge/stats") return Response.json(totals);
    if (path === "/__edge/flush") {
      // before the process ends: the queue lives in this isolate, and a write the replica never gets would leave
      // it behind for good (the next process's replica would differ from the primary)
      await replicate(env.REPLICA, env.DB, true);
      return Response.json({ pending: unreplicated.length });
    }
    if (path === "/__edge/spin") {
      // CPU without I/O: does workerd's clock advance during it? (bench-edge.ts reports it)
      const t0 = performance.now();
      let x = 0;
      const n = Number(new URL(request.url).searchParams.get("n"));
      for (let i = 0; i < n; i++) x = (x + Math.sqrt(i)) % 1e9;
      return Response.json({ ms: performance.now() - t0, x });
    }
    // the writes due at the replica by now, outside the request's figures (local work, not D1's latency)
    await replicate(env.REPLICA, env.DB);
    const began = performance.now();
    const f = { d1: 0, primary: 0, rows: 0, trips: [] as Trip[], began };
    const counted = {
      waitUntil(work: Promise<unknown>) {
        totals.pending++;
        totals.started++;
        const done = work.finally(() => {
          totals.pending--;
          totals.settled++;
        });
        ctx.waitUntil(done);
      },
      passThroughOnException: () => ctx.passThroughOnException(),
      props: ctx.props,
    } as WorkerExecutionContext;
    const response = await figures.run(f, () => pemba.fetch(request, edgeEnv(env), counted));
    // Pemba's time ends here: the figures' headers below are the bench's own work
    const workerMs = performance.now() - began;
    const out = new Response(response.body, response);
    out.headers.set("x-edge-d1", String(f.d1));
    out.headers.set("x-edge-primary", String(f.primary));
    out.headers.set("x-edge-rows", String(f.rows));
    // the statements abridged now, outside the request's time (the regex costs ms on an isolate's first request)
    const trips = f.trips.map((t) => ({ ...t, sql: t.sql.map(abridged) }));
    out.headers.set("x-edge-trips", JSON.stringify(trips));
    // the Worker's own time for the request, as workerd's clock shows it (it advances at I/O: see bench-edge.ts)
    out.headers.set("server-timing", `worker;dur=${workerMs.toFixed(1)}`);
    return out;
  },
};
