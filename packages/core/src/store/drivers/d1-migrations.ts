/**
 * Applies drizzle-kit's SQLite migrations (embedded, like the libSQL driver's) to a D1 database with the
 * bookkeeping of `wrangler d1 migrations apply`: the `d1_migrations` table, one row per applied file name
 * (`0000_init.sql`). So a database migrated by wrangler (wrangler.toml `migrations_dir = packages/core/drizzle/sqlite`)
 * is up to date for the Worker, and one the Worker migrated on first use is up to date for wrangler.
 */

import { SQLITE_MIGRATIONS } from "../sql/sqlite-migrations.generated.ts";
import type { D1Database, D1Result } from "./d1-binding.ts";

/** Wrangler's own statement (getCreateMigrationsTableQuery), so both create the same table. */
const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS "d1_migrations"(
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		name       TEXT UNIQUE,
		applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
);`;

/** The file name wrangler records for an embedded migration. */
export const d1MigrationName = (tag: string): string => `${tag}.sql`;

async function pendingMigrations(db: D1Database) {
  const [, applied] = await db.batch([
    db.prepare(CREATE_TABLE),
    db.prepare(`SELECT name FROM "d1_migrations"`),
  ]);
  const names = new Set(applied.results.map((r) => r.name as string));
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
    applied = await db.withSession("first-unconstrained").prepare(`SELECT name FROM "d1_migrations"`).all();
  } catch {
    return false; // no d1_migrations table yet
  }
  const names = new Set(applied.results.map((r) => r.name as string));
  return SQLITE_MIGRATIONS.every((m) => names.has(d1MigrationName(m.tag)));
}

/**
 * Applies the pending migrations in ONE batch (all or nothing); returns their names. When another isolate applied
 * them at the same time, our batch fails on its first CREATE TABLE and rolls back, and nothing is left pending.
 */
export async function applyD1Migrations(db: D1Database): Promise<string[]> {
  if (await appliedAtReplica(db)) return [];
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
