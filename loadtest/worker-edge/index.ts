/**
 * The Worker of loadtest/bench-edge.ts: Pemba's Worker with its D1 binding wrapped so that every D1 round trip takes
 * what it takes on Cloudflare (wrangler.toml's EDGE_* vars), and with per-request D1 figures in response headers.
 *
 * - A round trip (one `all()` or one `batch()`) waits EDGE_REPLICA_MS when a replica answers it, EDGE_PRIMARY_MS when
 *   the primary does. D1's routing rules decide which: a session started `first-unconstrained` reads at a replica,
 *   `first-primary` (and a binding used without a session) at the primary, a write always at the primary and the
 *   session stays there; a session started from a bookmark reads at a replica once that replica has the bookmark's
 *   write, i.e. after the write's lag (uniform in [EDGE_LAG_MIN_MS, EDGE_LAG_MAX_MS]), else at the primary.
 * - One local database holds the data, so a replica's answer is never actually older: staleness is what the
 *   bench checks end to end (a read with a fresh write's token must see the write), the routing is D1's.
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
/** When each write's bookmark reaches the replicas (Date.now() ms). */
const visibleAt = new Map<string, number>();
const isRead = (sql: string) => /^\s*(SELECT|WITH)\b/i.test(sql);
const sleep = (ms: number) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : undefined);

class Session implements D1DatabaseSession {
  #atPrimary: boolean;
  /** When this session's last write reaches the replicas. */
  #wroteVisibleAt: number | undefined;
  readonly #inner: D1DatabaseSession | D1Database;
  readonly #latency: Latency;

  constructor(inner: D1DatabaseSession | D1Database, atPrimary: boolean, latency: Latency) {
    this.#inner = inner;
    this.#atPrimary = atPrimary;
    this.#latency = latency;
  }

  prepare(sql: string): D1PreparedStatement {
    return new Statement(this, this.#inner.prepare(sql), sql);
  }

  batch(statements: D1PreparedStatement[]): Promise<D1Result[]> {
    const list = statements as Statement[];
    return this.run(
      list.map((s) => s.sql),
      () => this.#inner.batch(list.map((s) => s.inner)),
    );
  }

  getBookmark(): string | null {
    return "getBookmark" in this.#inner ? this.#inner.getBookmark() : null;
  }

  async run(sqls: string[], send: () => Promise<D1Result[]>): Promise<D1Result[]> {
    const writes = sqls.some((sql) => !isRead(sql));
    if (writes) this.#atPrimary = true;
    const latency = this.#latency;
    const atPrimary = this.#atPrimary;
    const f = figures.getStore();
    const start = f === undefined ? 0 : performance.now() - f.began;
    await sleep(atPrimary ? latency.primaryMs : latency.replicaMs);
    const results = await send();
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
      this.#wroteVisibleAt = Date.now() + lag;
    }
    // the session's bookmark after its write (and after its reads that follow, e.g. a replica's catch-up at the
    // primary: a snap token carries the latest) reaches the replicas with that write
    const bookmark = this.getBookmark();
    if (this.#wroteVisibleAt !== undefined && bookmark !== null)
      visibleAt.set(bookmark, this.#wroteVisibleAt);
    return results;
  }
}

class Statement implements D1PreparedStatement {
  readonly session: Session;
  readonly inner: D1PreparedStatement;
  readonly sql: string;

  constructor(session: Session, inner: D1PreparedStatement, sql: string) {
    this.session = session;
    this.inner = inner;
    this.sql = sql;
  }

  bind(...values: unknown[]): D1PreparedStatement {
    return new Statement(this.session, this.inner.bind(...values), this.sql);
  }

  async all(): Promise<D1Result> {
    const [result] = await this.session.run([this.sql], async () => [await this.inner.all()]);
    return result!;
  }
}

function latencyD1(db: D1Database, latency: Latency): D1Database {
  const direct = new Session(db, true, latency);
  return {
    prepare: (sql) => direct.prepare(sql),
    batch: (statements) => direct.batch(statements),
    withSession(start = "first-unconstrained") {
      const inner = db.withSession(start);
      if (start === "first-primary") return new Session(inner, true, latency);
      if (start === "first-unconstrained") return new Session(inner, false, latency);
      // a bookmark: a replica has it once its write's lag has passed (bookmarks of reads are never newer)
      const at = visibleAt.get(start);
      return new Session(inner, at !== undefined && Date.now() < at, latency);
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
    wrapped = { source: env, env: { ...env, DB: latencyD1(env.DB, latency) } };
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
    if (path === "/__edge/spin") {
      // CPU without I/O: does workerd's clock advance during it? (bench-edge.ts reports it)
      const t0 = performance.now();
      let x = 0;
      const n = Number(new URL(request.url).searchParams.get("n"));
      for (let i = 0; i < n; i++) x = (x + Math.sqrt(i)) % 1e9;
      return Response.json({ ms: performance.now() - t0, x });
    }
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
