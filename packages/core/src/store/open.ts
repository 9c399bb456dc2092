/**
 * Picks the driver from a database URL: `memory:` -> MemoryStore; `postgres://`/`postgresql://` -> PostgresStore;
 * `libsql:`, `http(s):`, `ws(s):` and `file:` -> LibsqlStore; anything else (a path, `sqlite://path`, default
 * ./pemba.db) -> SqliteStore. Opening a SQL store applies the pending migrations.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@libsql/client";
import Database from "better-sqlite3";
import pg from "pg";
import { DEFAULT_DATABASE } from "./default-database.ts";
import { LibsqlStore } from "./drivers/libsql.ts";
import { PostgresStore } from "./drivers/postgres.ts";
import { SqliteStore, sqlitePath } from "./drivers/sqlite.ts";
import { MemoryStore } from "./memory/memory-store.ts";
import {
  DEFAULT_LIBSQL_REPLICA_WAIT_MS,
  type ReadReplicaOptions,
  ReadReplicaStore,
} from "./proxies/read-replicas/read-replica-store.ts";
import type { QueryObserver } from "./sql/executor.ts";
import { PG_MIGRATIONS_URL, SQLITE_MIGRATIONS_URL } from "./sql/migrations-location.ts";
import type { Store } from "./store.ts";

export interface OpenStoreOptions {
  /** Time per statement kind ("query_tuples", "write", ...), for metrics. SQL drivers only. */
  onQuery?: QueryObserver;
  /** libSQL auth token (remote URLs). */
  authToken?: string;
  /** PostgreSQL: the pool's most connections (default 10), each replica's pool too. */
  pgPoolSize?: number;
  /**
   * Read replicas of a PostgreSQL or libSQL server database (URLs, nearest first): a ReadReplicaStore over the
   * primary and them (proxies/read-replicas/).
   */
  readReplicas?: readonly string[];
  /** With read replicas: how long a read waits for one to reach its snap before the primary answers it (ms). */
  replicaWaitMs?: number;
  /** With read replicas: each read's destination (a replica's index, or "primary"). */
  onReplicaRoute?: ReadReplicaOptions["onRoute"];
}

export type StoreDriver = Store["kind"];

export function driverFor(url: string): StoreDriver {
  if (url === "memory:" || url.startsWith("memory:")) return "memory";
  if (/^postgres(ql)?:\/\//.test(url)) return "postgres";
  if (/^(libsql|https?|wss?|file):/.test(url)) return "libsql";
  return "sqlite";
}

/**
 * Opens the bare driver (with read replicas: the primary and them as one ReadReplicaStore); an in-memory replica in
 * front of it is createPemba's wiring (withReplica), not this.
 */
export async function openStore(
  url: string = DEFAULT_DATABASE.node,
  opts: OpenStoreOptions = {},
): Promise<Store> {
  const replicas = opts.readReplicas ?? [];
  if (replicas.length === 0) return openDriver(url, opts);
  const driver = driverFor(url);
  const remoteLibsql = driver === "libsql" && !/^file:/.test(url);
  if (driver !== "postgres" && !remoteLibsql)
    throw new Error(
      "read replicas need a postgres:// database (hot standbys) or a libSQL server's (sqld replicas); the database is a local file or memory",
    );
  for (const replica of replicas) {
    if (driverFor(replica) !== driver || /^file:/.test(replica))
      throw new Error(
        `read replica ${whereIs(replica)} is not a ${driver === "postgres" ? "postgres://" : "libSQL server"} URL like the database`,
      );
  }
  const primary = await openDriver(url, opts);
  // a replica refuses DDL (hot standby) or receives the primary's tables by replication (sqld): never migrated
  const openReplica = (replica: string) => () =>
    driver === "postgres"
      ? PostgresStore.open(replica, { onQuery: opts.onQuery, max: opts.pgPoolSize, migrate: false })
      : LibsqlStore.open(replica, { onQuery: opts.onQuery, authToken: opts.authToken, migrate: false });
  return new ReadReplicaStore(primary, replicas.map(openReplica), {
    waitMs: opts.replicaWaitMs ?? (driver === "postgres" ? 0 : DEFAULT_LIBSQL_REPLICA_WAIT_MS),
    onRoute: opts.onReplicaRoute,
  });
}

/** A URL's scheme and host only (no user, password or token), or "a local file" for a path. */
function whereIs(url: string): string {
  try {
    const u = new URL(url);
    return u.host === "" ? `${u.protocol} (a local file)` : `${u.protocol}//${u.host}`;
  } catch {
    return "a local file";
  }
}

async function openDriver(url: string, opts: OpenStoreOptions): Promise<Store> {
  switch (driverFor(url)) {
    case "memory":
      return new MemoryStore();
    case "postgres":
      return PostgresStore.open(url, { onQuery: opts.onQuery, max: opts.pgPoolSize });
    case "libsql":
      return LibsqlStore.open(url, { onQuery: opts.onQuery, authToken: opts.authToken });
    default:
      return SqliteStore.open(url, { onQuery: opts.onQuery });
  }
}

const MIGRATIONS_COUNT = "SELECT count(*) AS n FROM __drizzle_migrations";

async function appliedCount(driver: StoreDriver, url: string, authToken?: string): Promise<number> {
  try {
    if (driver === "sqlite") {
      const db = new Database(sqlitePath(url));
      try {
        return Number((db.prepare(MIGRATIONS_COUNT).get() as { n: number }).n);
      } finally {
        db.close();
      }
    }
    if (driver === "libsql") {
      const client = createClient({ url, authToken });
      try {
        return Number((await client.execute(MIGRATIONS_COUNT)).rows[0].n);
      } finally {
        client.close();
      }
    }
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      return Number((await pool.query("SELECT count(*) AS n FROM drizzle.__drizzle_migrations")).rows[0].n);
    } finally {
      await pool.end();
    }
  } catch {
    return 0; // no migrations table yet
  }
}

function migrationTags(driver: StoreDriver): string[] {
  const folder = fileURLToPath(driver === "postgres" ? PG_MIGRATIONS_URL : SQLITE_MIGRATIONS_URL);
  const journal = JSON.parse(readFileSync(join(folder, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string }[];
  };
  return journal.entries.map((e) => e.tag);
}

/** Creates or upgrades the tables at `url`; returns the names of the migrations it applied. */
export async function migrate(
  url: string = DEFAULT_DATABASE.node,
  opts: OpenStoreOptions = {},
): Promise<string[]> {
  const driver = driverFor(url);
  if (driver === "memory") return [];
  const before = await appliedCount(driver, url, opts.authToken);
  const store = await openStore(url, opts);
  await store.close();
  const after = await appliedCount(driver, url, opts.authToken);
  return migrationTags(driver).slice(before, after);
}
