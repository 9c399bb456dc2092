/**
 * The Worker's access log: ONE JSON line per request on console.log (Workers Logs indexes its fields), e.g.
 * {"method":"POST","route":"/v1/tenants/:tenant_id/permissions/check","status":200,"decision":"CHECK_RESULT_ALLOWED",
 *  "statements":1,"by_kind":{"freshness":1},"rows_read":1,"ms":2}
 * `statements` and `rows_read` are this request's SQL statements and the rows they read (D1: as D1 bills them;
 * libSQL: rows returned), `by_kind` the statements per kind (head_snap, query_reads, read_schema, write, ...); a
 * replica's catch-up or a schema head refresh counts for the request that ran it. The figures are gathered in an
 * AsyncLocalStorage scope (compatibility flag `nodejs_als`), fed by the store's onQuery observer and the app's
 * observe hook, so concurrent requests of one isolate never mix.
 * PEMBA_LOG_LEVEL picks the lines as on Node: a request that succeeded is an info line, one that failed (status >=
 * 400) a warn line; a level above a line's drops it (`warn`: failed requests only). A line is one console.log call,
 * whose cost in workerd does not depend on its length.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  LOG_LEVEL_NUMBERS,
  type LogLevel,
  matchRoute,
  type QueryObserver,
  type RequestInfo,
} from "@pemba/core";

/** Whether a line at `line` is written under the setting `level`. */
export function writesAt(level: LogLevel, line: "info" | "warn"): boolean {
  return LOG_LEVEL_NUMBERS[line] >= LOG_LEVEL_NUMBERS[level];
}

interface RequestFigures {
  route: string | undefined;
  /** The request's path when no route matched it (a 404). */
  path?: string;
  decision: string | undefined;
  statements: number;
  byKind: Record<string, number>;
  rowsRead: number;
  /** Work to start once the response is ready (replica loads), each bound to the request's async context. */
  later: (() => Promise<unknown>)[] | undefined;
  /** Figures of background work (`later`'s), not of a request. */
  background?: true;
  /** The invocation's ctx.waitUntil (keepAlive). */
  waitUntil?: (work: Promise<unknown>) => void;
}

const newFigures = (): RequestFigures => ({
  route: undefined,
  decision: undefined,
  statements: 0,
  byKind: {},
  rowsRead: 0,
  later: undefined,
});

const current = new AsyncLocalStorage<RequestFigures>();

/** The store's onQuery observer: adds a call's statements and rows to the current request. */
export const countQuery: QueryObserver = (kind, _seconds, rowsRead, statements) => {
  const figures = current.getStore();
  if (figures === undefined) return;
  figures.statements += statements ?? 1;
  figures.byKind[kind] = (figures.byKind[kind] ?? 0) + (statements ?? 1);
  figures.rowsRead += rowsRead ?? 0;
};

/** The app's observe hook: the route template and the decision of a check. */
export function observeRequest(info: RequestInfo): void {
  const figures = current.getStore();
  if (figures === undefined) return;
  figures.route = info.route;
  figures.path = info.path;
  figures.decision = info.decision;
}

/**
 * The replica's background work (BackgroundLoads): `start` runs once the current request's response is ready, under
 * its ctx.waitUntil and in its async context (its D1 sessions), with figures of its own: its round trips wait a
 * timer turn each (inBackground, d1-around.ts), and at info level it writes one line when it ends, e.g.
 * {"msg":"background work done","statements":3,"by_kind":{"freshness":3},"rows_read":12,"ms":4}. The request's scope
 * is this file's, so the Worker needs no second AsyncLocalStorage. Outside a request it runs now.
 */
export function afterResponse(start: () => Promise<unknown>): void {
  const figures = current.getStore();
  if (figures === undefined) {
    void start();
    return;
  }
  const own: RequestFigures = { ...newFigures(), background: true, waitUntil: figures.waitUntil };
  figures.later ??= [];
  figures.later.push(AsyncLocalStorage.bind(() => current.run(own, () => backgroundWork(own, start))));
}

/**
 * Keeps the current request (or its background work) alive until `work` settles: its ctx.waitUntil. Shared work
 * (core's shared-work.ts) goes through here, since a promise other requests await must settle within the request
 * that created it. Outside a request it does nothing.
 */
export function keepAlive(work: Promise<unknown>): void {
  current.getStore()?.waitUntil?.(work);
}

/** Whether the current code runs as background work (afterResponse), not for a request's response. */
export function inBackground(): boolean {
  return current.getStore()?.background === true;
}

/** The level of the isolate's request log (PEMBA_LOG_LEVEL once the Worker is open), for background work's lines. */
let backgroundLevel: () => LogLevel = () => "info";

async function backgroundWork(figures: RequestFigures, start: () => Promise<unknown>): Promise<void> {
  const started = Date.now();
  try {
    await start();
    // work that this work asked for in turn: within the same ctx.waitUntil
    for (let next = figures.later?.shift(); next !== undefined; next = figures.later?.shift()) await next();
  } finally {
    if (writesAt(backgroundLevel(), "info")) {
      console.log(
        JSON.stringify({
          msg: "background work done",
          statements: figures.statements,
          by_kind: figures.byKind,
          rows_read: figures.rowsRead,
          ms: Date.now() - started,
        }),
      );
    }
  }
}

/** A request the app did not answer (the Worker could not start): its route table label, else its path. */
function routeOf(request: Request): string {
  const path = new URL(request.url).pathname;
  return matchRoute(request.method, path)?.route.endpoint.route ?? path;
}

/**
 * Runs one request in its own scope and writes its line once the response is ready, when `level` (read then:
 * PEMBA_LOG_LEVEL, known once the Worker is open) lets it through.
 */
export async function loggedRequest(
  request: Request,
  handle: () => Promise<Response>,
  ctx?: { waitUntil(work: Promise<unknown>): void },
  level: () => LogLevel = () => "info",
): Promise<Response> {
  const figures = newFigures();
  if (ctx !== undefined) figures.waitUntil = (work) => ctx.waitUntil(work);
  backgroundLevel = level;
  const started = Date.now();
  return current.run(figures, async () => {
    let status = 500;
    try {
      const response = await handle();
      status = response.status;
      return response;
    } finally {
      if (writesAt(level(), status < 400 ? "info" : "warn")) {
        console.log(
          JSON.stringify({
            method: request.method,
            route: figures.route ?? routeOf(request),
            path: figures.path,
            status,
            decision: figures.decision,
            statements: figures.statements,
            by_kind: figures.byKind,
            rows_read: figures.rowsRead,
            ms: Date.now() - started,
          }),
        );
      }
      // the response is ready: now the background work it asked for (its CPU no longer delays the answer)
      if (figures.later !== undefined) {
        for (const start of figures.later) {
          const work = start();
          if (ctx === undefined) void work;
          else ctx.waitUntil(work);
        }
      }
    }
  });
}
