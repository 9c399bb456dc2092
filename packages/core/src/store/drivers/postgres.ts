/**
 * PostgreSQL store on node-postgres (Pool). Snapshots are our own transaction ids (not xids), from a sequence: a
 * write takes its id while holding its tenant's row lock (nextTxStatement), so writes of different tenants run
 * concurrently and the ids of one tenant commit in order; a tenant's head snap is its last committed id.
 */
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { PembaError } from "../../errors.ts";
import type { WriteListener, WriteNotices } from "../capabilities.ts";
import type { Statement } from "../sql/dialect.ts";
import type { QueryObserver, SqlExecutor, StatementResult } from "../sql/executor.ts";
import { asSqlError, timed } from "../sql/executor.ts";
import { tenantExistsStatement } from "../sql/meta-plan.ts";
import { PG_MIGRATIONS_URL } from "../sql/migrations-location.ts";
import { pgDialect } from "../sql/pg-dialect.ts";
import type { Row } from "../sql/rows.ts";
import { SqlStore } from "../sql/sql-store.ts";
import { WRITES_CHANNEL } from "../sql/write-plan.ts";

export const PG_MIGRATIONS = fileURLToPath(PG_MIGRATIONS_URL);

export interface PostgresStoreOptions {
  onQuery?: QueryObserver;
  /** Pool size (default 10). */
  max?: number;
}

const INT8_OID = 20;

class PostgresExecutor implements SqlExecutor {
  readonly dialect = pgDialect;
  private readonly pool: pg.Pool;
  private readonly onQuery?: QueryObserver;

  constructor(pool: pg.Pool, onQuery?: QueryObserver) {
    this.pool = pool;
    this.onQuery = onQuery;
  }

  all<R>(kind: string, s: Statement<R>): Promise<R[]> {
    return timed(this.onQuery, kind, async () => (await this.pool.query(s.sql, s.params)).rows as R[]);
  }

  transaction(kind: string, statements: Statement[], requireTenant?: string): Promise<StatementResult[]> {
    return timed(this.onQuery, kind, async () => {
      const client = await this.pool.connect();
      try {
        await client.query("BEGIN");
        if (requireTenant !== undefined) {
          const check = tenantExistsStatement(this.dialect, requireTenant);
          const found = await client.query(check.sql, check.params);
          if (found.rowCount === 0) throw new PembaError("ERROR_CODE_TENANT_NOT_FOUND");
        }
        const results: StatementResult[] = [];
        for (const s of statements) {
          const r = await client.query(s.sql, s.params);
          if (s.requireRow !== undefined && r.rowCount === 0) throw new PembaError(s.requireRow);
          results.push({ rows: r.rows as Row[], changes: r.rowCount ?? 0 });
        }
        await client.query("COMMIT");
        return results;
      } catch (e) {
        await client.query("ROLLBACK").catch(() => {});
        throw asSqlError(e);
      } finally {
        client.release();
      }
    });
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/**
 * One connection LISTENing on the writes channel, opened by the first `onWrite`: every write's transaction queues a
 * notification (nextTxStatement) that PostgreSQL delivers to every listening session when it commits, in commit
 * order. A dropped connection reconnects after a second; notices sent meanwhile are lost (the replica's timer
 * catches up).
 */
class WriteNoticeConnection {
  readonly #url: string;
  readonly #listeners: WriteListener[] = [];
  #client: pg.Client | undefined;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(url: string) {
    this.#url = url;
  }

  #listening: Promise<void> | undefined;

  /** Resolves once the connection listens (or failed to, and retries). */
  add(listener: WriteListener): Promise<void> {
    this.#listeners.push(listener);
    this.#listening ??= this.#connect();
    return this.#listening;
  }

  async #connect(): Promise<void> {
    this.#retry = undefined;
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.#url });
    this.#client = client;
    client.on("notification", (n) => {
      if (n.channel !== WRITES_CHANNEL || !n.payload) return;
      const [tenantId, snap] = JSON.parse(n.payload) as [string, number];
      for (const listener of this.#listeners) listener(tenantId, Number(snap));
    });
    client.on("error", () => this.#reconnect(client));
    client.on("end", () => this.#reconnect(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${WRITES_CHANNEL}`);
    } catch {
      this.#reconnect(client);
    }
  }

  #reconnect(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => {});
    if (this.#closed) return;
    this.#retry = setTimeout(() => void this.#connect(), 1000);
    this.#retry.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }
}

export class PostgresStore extends SqlStore implements WriteNotices {
  readonly kind = "postgres" as const;
  readonly #notices: WriteNoticeConnection;

  private constructor(exec: PostgresExecutor, url: string) {
    super(exec);
    this.#notices = new WriteNoticeConnection(url);
  }

  /** Hears every committed write of the database, this process's and other processes' (LISTEN/NOTIFY). */
  onWrite(listener: WriteListener): Promise<void> {
    return this.#notices.add(listener);
  }

  override async close(): Promise<void> {
    await this.#notices.close();
    await super.close();
  }

  /** Connects to `url` (postgres:// or postgresql://) and applies the migrations. */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: opts.max ?? 10,
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          oid === INT8_OID
            ? Number
            : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
      },
    });
    try {
      // Connect first: a connection failure inside the migrator surfaces only as drizzle's
      // `Failed query: CREATE SCHEMA ... "drizzle"`, hiding ECONNREFUSED or a missing database.
      try {
        (await pool.connect()).release();
      } catch (e) {
        throw connectionError(url, e);
      }
      await migrate(drizzle(pool), { migrationsFolder: PG_MIGRATIONS });
    } catch (e) {
      await pool.end();
      throw e;
    }
    return new PostgresStore(new PostgresExecutor(pool, opts.onQuery), url);
  }
}

/**
 * `cannot connect to PostgreSQL at host:port (database "d", user "u"): <cause>`, with the cause's code
 * (ECONNREFUSED, ENOTFOUND, 3D000 for a missing database, 28P01 for a wrong password, ...) as `code`.
 */
function connectionError(url: string, cause: unknown): Error {
  // pg's own reading of the URL (host, port, socket directory, defaults), without connecting
  const target = new pg.Client({ connectionString: url });
  const reason = cause instanceof Error ? cause.message || String(cause) : String(cause);
  const error = new Error(
    `cannot connect to PostgreSQL at ${target.host}:${target.port} (database "${target.database}", user "${target.user}"): ${reason}`,
    { cause },
  );
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === "string") Object.assign(error, { code });
  return error;
}
