/**
 * libSQL store (@libsql/client): file:, :memory:, libsql: and http(s): URLs, sharing SQLite's tables and SQL.
 * The Cloudflare Worker uses it too, so this module imports nothing Node-only: the migrations are embedded
 * (sql/sqlite-migrations.generated.ts) rather than read from disk.
 */
import { type Client, createClient, type InStatement } from "@libsql/client";
import { PembaError } from "../../errors.ts";
import { type Statement, sqliteDialect } from "../sql/dialect.ts";
import type { QueryObserver, SqlExecutor, StatementResult } from "../sql/executor.ts";
import { asSqlError, measureRows, timed } from "../sql/executor.ts";
import { tenantExistsStatement } from "../sql/meta-plan.ts";
import type { Row } from "../sql/rows.ts";
import { SqlStore } from "../sql/sql-store.ts";
import { SQLITE_MIGRATIONS } from "../sql/sqlite-migrations.generated.ts";

export interface LibsqlStoreOptions {
  onQuery?: QueryObserver;
  authToken?: string;
  /** Apply pending migrations at open (default true). */
  migrate?: boolean;
}

const toArgs = (params: unknown[]) => params as InStatement extends { args?: infer A } ? A : never;

class LibsqlExecutor implements SqlExecutor {
  readonly dialect = sqliteDialect;
  private readonly client: Client;
  private readonly onQuery?: QueryObserver;

  constructor(client: Client, onQuery?: QueryObserver) {
    this.client = client;
    this.onQuery = onQuery;
  }

  all<R>(kind: string, s: Statement<R>): Promise<R[]> {
    return timed(
      this.onQuery,
      kind,
      async () => {
        const rs = await this.client.execute({ sql: s.sql, args: toArgs(s.params) });
        return rs.rows as unknown as R[];
      },
      measureRows,
    );
  }

  transaction(kind: string, statements: Statement[], requireTenant?: string): Promise<StatementResult[]> {
    return timed(
      this.onQuery,
      kind,
      async () => {
        if (requireTenant !== undefined) {
          const check = tenantExistsStatement(this.dialect, requireTenant);
          const rs = await this.client.execute({ sql: check.sql, args: toArgs(check.params) });
          if (rs.rows.length === 0) throw new PembaError("ERROR_CODE_TENANT_NOT_FOUND");
        }
        if (statements.length === 0) return [];
        const results = await this.client
          .batch(
            statements.map((s) => ({ sql: s.sql, args: toArgs(s.params) })),
            "write",
          )
          .catch((e) => {
            throw asSqlError(e);
          });
        return results.map((rs) => ({ rows: rs.rows as unknown as Row[], changes: rs.rowsAffected }));
      },
      (results) => [
        results.reduce((sum, r) => sum + r.rows.length, 0),
        statements.length + (requireTenant === undefined ? 0 : 1),
      ],
    );
  }

  async close(): Promise<void> {
    this.client.close();
  }
}

/**
 * drizzle's libSQL migrator, over migrations embedded at build time instead of read from disk: same bookkeeping
 * table and rules, so a database migrated by either one is up to date for the other.
 */
async function applyMigrations(client: Client): Promise<string[]> {
  await client.execute(
    `CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`,
  );
  const last = await client.execute(
    `SELECT id, hash, created_at FROM "__drizzle_migrations" ORDER BY created_at DESC LIMIT 1`,
  );
  const lastMillis = last.rows.length > 0 ? Number(last.rows[0].created_at) : undefined;
  const pending = SQLITE_MIGRATIONS.filter((m) => lastMillis === undefined || lastMillis < m.folderMillis);
  const statements: InStatement[] = [];
  for (const m of pending) {
    for (const sql of m.sql) if (sql.trim() !== "") statements.push(sql);
    statements.push({
      sql: `INSERT INTO "__drizzle_migrations" ("hash", "created_at") VALUES (?, ?)`,
      args: [m.hash, m.folderMillis],
    });
  }
  if (statements.length > 0) await client.batch(statements, "write");
  return pending.map((m) => m.tag);
}

export class LibsqlStore extends SqlStore {
  readonly kind = "libsql" as const;

  static async open(url: string, opts: LibsqlStoreOptions = {}): Promise<LibsqlStore> {
    const client = createClient({ url, authToken: opts.authToken });
    if (opts.migrate !== false) {
      try {
        await applyMigrations(client);
      } catch (e) {
        client.close();
        throw e;
      }
    }
    return new LibsqlStore(new LibsqlExecutor(client, opts.onQuery));
  }
}
