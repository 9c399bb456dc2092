/**
 * The Worker on D1: one D1Store per bound database and isolate, and D1 sessions per request and database. Each
 * request runs inside its own scope (AsyncLocalStorage, compatibility flag `nodejs_als`) that opens a D1Sessions
 * for each database it touches, so its token-less reads start at the nearest replica, its writes at the primary, a
 * snap token's bookmark applies to that request only, and its query count is checked against D1's per-invocation
 * limit. With several databases (`d1:DB,DB2,DB3`), tenants are spread over them by a ShardedStore.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { D1Database, D1Simulation, QueryObserver, Store } from "@pemba/core";
import { D1Sessions, D1Store, ShardedStore, TenantPlacement } from "@pemba/core";
import { ConfigError } from "./config.ts";
import { aroundD1, simulatedD1, yieldingInBackground } from "./d1-around.ts";
import { inBackground } from "./request-log.ts";

/** The current request's sessions, one per database it touched. */
const requestSessions = new AsyncLocalStorage<Map<D1Database, D1Sessions>>();

/** The D1 database bound as `name`; a ConfigError naming `database` (the setting) when wrangler.toml binds none. */
export function d1Binding(env: object, name: string, database = `d1:${name}`): D1Database {
  const db = (env as Record<string, unknown>)[name] as Partial<D1Database> | undefined;
  if (typeof db?.prepare !== "function" || typeof db.withSession !== "function") {
    throw new ConfigError(
      `PEMBA_DATABASE "${database}": no D1 database is bound as ${name}; add a [[d1_databases]] binding = "${name}" to wrangler.toml`,
    );
  }
  return db as D1Database;
}

/**
 * The binding as the Worker's stores use it: background work's round trips yield to the event loop first
 * (d1-around.ts), and with `simulate` (PEMBA_D1_SIMULATE) each round trip waits D1's latency on Cloudflare.
 */
export function aroundBinding(db: D1Database, simulate: D1Simulation | undefined): D1Database {
  const timed = simulate === undefined ? db : aroundD1(db, simulatedD1(simulate));
  return aroundD1(timed, yieldingInBackground(inBackground));
}

/** The current request's sessions of `db` (opened on first use); undefined outside a request. */
function sessionsOf(db: D1Database): D1Sessions | undefined {
  const all = requestSessions.getStore();
  if (all === undefined) return undefined;
  let sessions = all.get(db);
  if (sessions === undefined) {
    sessions = new D1Sessions(db);
    all.set(db, sessions);
  }
  return sessions;
}

export function openD1Store(db: D1Database, onQuery?: QueryObserver): Promise<D1Store> {
  return D1Store.open(db, { sessions: () => sessionsOf(db), onQuery });
}

export interface D1BindingOf {
  name: string;
  db: D1Database;
}

/**
 * The store over the bound databases: the one database's D1Store, or a ShardedStore placing each tenant on one of
 * several (`pinned` first, else rendezvous hashing of its id over the bindings' names).
 */
export async function openD1Stores(
  bindings: readonly D1BindingOf[],
  pinned: ReadonlyMap<string, string> | undefined,
  onQuery?: QueryObserver,
): Promise<Store> {
  if (bindings.length === 1) return openD1Store(bindings[0]!.db, onQuery);
  const stores = await Promise.all(bindings.map((b) => openD1Store(b.db, onQuery)));
  const placement = new TenantPlacement({ databases: bindings.map((b) => b.name), pinned });
  const shards = bindings.map((b, i) => ({ name: b.name, store: stores[i]! }));
  return new ShardedStore(shards, placement, { pinSetting: "PEMBA_D1_TENANTS" });
}

/** Runs one request (or cron invocation) with its own D1 sessions. */
export function withD1Sessions<T>(run: () => T): T {
  return requestSessions.run(new Map(), run);
}
