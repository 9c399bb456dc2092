/**
 * The Worker on D1: one D1Store per isolate, and D1 sessions per request. Each request runs inside its own
 * D1Sessions (AsyncLocalStorage, compatibility flag `nodejs_als`), so its token-less reads start at the nearest
 * replica, its writes at the primary, a snap token's bookmark applies to that request only, and its query count
 * is checked against D1's per-invocation limit.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { D1Database, QueryObserver } from "@pemba/core";
import { D1Sessions, D1Store } from "@pemba/core";
import { ConfigError } from "./config.ts";

const requestSessions = new AsyncLocalStorage<D1Sessions>();

/** The D1 database bound as `name`; a ConfigError when wrangler.toml binds none by that name. */
export function d1Binding(env: object, name: string): D1Database {
  const db = (env as Record<string, unknown>)[name] as Partial<D1Database> | undefined;
  if (typeof db?.prepare !== "function" || typeof db.withSession !== "function") {
    throw new ConfigError(
      `PEMBA_DATABASE "d1:${name}": no D1 database is bound as ${name}; add a [[d1_databases]] binding = "${name}" to wrangler.toml`,
    );
  }
  return db as D1Database;
}

export function openD1Store(db: D1Database, onQuery?: QueryObserver): Promise<D1Store> {
  return D1Store.open(db, { sessions: () => requestSessions.getStore(), onQuery });
}

/** Runs one request (or cron invocation) with its own D1 sessions. */
export function withD1Sessions<T>(db: D1Database, run: () => T): T {
  return requestSessions.run(new D1Sessions(db), run);
}
