/**
 * Applies drizzle-kit's SQLite migrations (embedded, like the libSQL driver's) to a D1 database with the
 * bookkeeping of `wrangler d1 migrations apply`: the `d1_migrations` table, one row per applied file name
 * (`0000_init.sql`). So a database migrated by wrangler (wrangler.toml `migrations_dir = packages/core/drizzle/sqlite`)
 * is up to date for the Worker, and one the Worker migrated on first use is up to date for wrangler.
 */

import { joinShared, sharedWork } from "../../shared-work.ts";
import { SQLITE_MIGRATIONS } from "../sql/sqlite-migrations.generated.ts";
import type { D1Database, D1Result } from "./d1-binding.ts";

/** Wrangler's own statement (getCreateMigrationsTableQuery), so both create the same table. */
const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS "d1_migrations"(
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		name       TEXT UNIQUE,
		applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
);`;

/** The statement that lists the applied migrations (fails when no migration ever ran: no table). */
export const APPLIED_MIGRATIONS_SQL = `SELECT name FROM "d1_migrations"`;

/** The file name wrangler records for an embedded migration. */
export const d1MigrationName = (tag: string): string => `${tag}.sql`;

async function pendingMigrations(db: D1Database) {
  const [, applied] = await db.batch([db.prepare(CREATE_TABLE), db.prepare(APPLIED_MIGRATIONS_SQL)]);
  return notApplied(applied.results);
}

/** The embedded migrations the rows of APPLIED_MIGRATIONS_SQL do not name. */
function notApplied(applied: readonly Record<string, unknown>[]) {
  const names = new Set(applied.map((r) => r.name as string));
  return SQLITE_MIGRATIONS.filter((m) => !names.has(d1MigrationName(m.tag)));
}

/**
 * Whether a replica (the nearest, one read) already has every migration: then an isolate's start sends nothing to
 * the primary (the primary's check creates the table, a write, and may be far). A replica that lags behind a
 * migration, or has no table yet, answers no and the primary decides; applied migrations are never undone, so a yes
 * is never wrong.
 */
async function appliedAtReplica(db: D1Database): Promise<boolean> {
  let applied: D1Result;
  try {
    applied = await db.withSession("first-unconstrained").prepare(APPLIED_MIGRATIONS_SQL).all();
  } catch {
    return false; // no d1_migrations table yet
  }
  return notApplied(applied.results).length === 0;
}

/**
 * Applies the pending migrations in ONE batch (all or nothing); returns their names. When another isolate applied
 * them at the same time, our batch fails on its first CREATE TABLE and rolls back, and nothing is left pending.
 * `atReplica: false` skips the replica's look (the caller has just seen a replica without them).
 */
export async function applyD1Migrations(db: D1Database, atReplica = true): Promise<string[]> {
  if (atReplica && (await appliedAtReplica(db))) return [];
  const pending = await pendingMigrations(db);
  if (pending.length === 0) return [];
  const statements = [];
  for (const m of pending) {
    for (const sql of m.sql) if (sql.trim() !== "") statements.push(db.prepare(sql));
    statements.push(db.prepare(`INSERT INTO "d1_migrations" (name) VALUES (?)`).bind(d1MigrationName(m.tag)));
  }
  try {
    await db.batch(statements);
  } catch (e) {
    if ((await pendingMigrations(db)).length > 0) throw e;
    return [];
  }
  return pending.map((m) => d1MigrationName(m.tag));
}

/**
 * A store's migration check, carried by its first reads (no round trip of its own): until the database is known to
 * have every migration, each read also lists the applied migrations in the same batch (the same round trip and
 * consistent view; D1Executor sends it). A list naming them all settles the check, and that read's answer stands.
 * A list missing some, or a read that failed (no d1_migrations table: a database nothing migrated yet), applies
 * the pending migrations at the primary (`ensure`) and the read is sent again. Writes `ensure` before they are
 * sent (a look at a replica, then the primary only when it lacks some). A migration that fails fails the request
 * with its reason; the next request tries again.
 */
export class D1MigrationCheck {
  readonly #db: D1Database;
  #settled: boolean;
  #applying: Promise<void> | undefined;

  /** `settled`: the database is known to be migrated (or the caller migrates it), no check at all. */
  constructor(db: D1Database, settled = false) {
    this.#db = db;
    this.#settled = settled;
  }

  get settled(): boolean {
    return this.#settled;
  }

  /** A read's rows of APPLIED_MIGRATIONS_SQL: settles the check when they name every migration; whether settled. */
  saw(applied: readonly Record<string, unknown>[]): boolean {
    if (notApplied(applied).length === 0) this.#settled = true;
    return this.#settled;
  }

  /**
   * Applies what is pending, one caller at a time (`atReplica: false` when a replica was just seen without them:
   * straight to the primary); settled once it resolves.
   */
  ensure(atReplica = true): Promise<void> {
    if (this.#settled) return Promise.resolve();
    if (this.#applying !== undefined) return joinShared(this.#applying, () => this.#apply(atReplica));
    this.#applying = sharedWork(this.#apply(atReplica));
    return this.#applying;
  }

  #apply(atReplica: boolean): Promise<void> {
    return applyD1Migrations(this.#db, atReplica).then(
      () => {
        this.#settled = true;
      },
      (e: unknown) => {
        this.#applying = undefined;
        throw new Error(`cannot migrate the D1 database: ${e instanceof Error ? e.message : String(e)}`, {
          cause: e,
        });
      },
    );
  }
}
