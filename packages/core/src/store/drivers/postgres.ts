/**
 * PostgreSQL store on node-postgres (Pool). Snapshots are our own transaction ids (not xids), from a sequence: a
 * write takes its id while holding its tenant's row lock (nextTxStatement), so writes of different tenants run
 * concurrently and the ids of one tenant commit in order; a tenant's head snap is its last committed id.
 */
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { PembaError } from "../../errors.ts";
import type { FeedRead, WriteFeed, WriteListener, WriteNotices } from "../capabilities.ts";
import type { Statement } from "../sql/dialect.ts";
import type { QueryObserver, SqlExecutor, StatementResult } from "../sql/executor.ts";
import { asSqlError, timed } from "../sql/executor.ts";
import { tenantExistsStatement } from "../sql/meta-plan.ts";
import { PG_MIGRATIONS_URL } from "../sql/migrations-location.ts";
import { pgDialect } from "../sql/pg-dialect.ts";
import type { Row } from "../sql/rows.ts";
import { SqlStore } from "../sql/sql-store.ts";
import { WRITES_CHANNEL } from "../sql/write-plan.ts";
import type { Snap, WriteRequest } from "../store.ts";

export const PG_MIGRATIONS = fileURLToPath(PG_MIGRATIONS_URL);

export interface PostgresStoreOptions {
  onQuery?: QueryObserver;
  /** Pool size (default 10). */
  max?: number;
}

const INT8_OID = 20;
/** SQLSTATE of a failsWithoutRow statement without its row. */
const DIVISION_BY_ZERO = "22012";

/**
 * The name of a statement's server-side prepared statement: a hash of its text, so one text has one name on every
 * connection (node-postgres parses a named statement once per connection and then only binds and executes it) and
 * two texts never share one (node-postgres refuses a name reused for another text on a connection).
 */
export function preparedName(text: string): string {
  return `pemba_${createHash("sha256").update(text).digest("base64url").slice(0, 40)}`;
}

/** The most values a list or row-set parameter of a statement prepared by name holds (see preparesByName). */
export const NAMED_MAX_LIST = 16;

/**
 * Whether a statement runs as a named prepared statement (parsed once per connection; PostgreSQL may then cache a
 * generic plan for it, `plan_cache_mode=auto`) or as node-postgres' unnamed statement (parsed and planned for its own
 * values at every execution). Named: every list parameter (a key list, a row set's column) holds at most
 * NAMED_MAX_LIST values, e.g. a 1-row write, a check, a feed read. Unnamed: a larger list, e.g. a 1,000-row write.
 * One text binds lists of any length (unnest), and a plan cached for a few values can cost many times more for
 * thousands (a 1,000-row write ran 5x slower on a generic plan cached during 1-row writes); a parse and a plan cost
 * little next to a large statement's execution, so large ones never share a cached plan.
 */
export function preparesByName(s: Statement<unknown>): boolean {
  return s.params.every((p) => !Array.isArray(p) || p.length <= NAMED_MAX_LIST);
}

/** Statement texts -> prepared statement names (the texts are the dialect's few rendered shapes). */
class PreparedNames {
  readonly #names = new Map<string, string>();

  of(text: string): string {
    let name = this.#names.get(text);
    if (name === undefined) {
      // bounded like the dialect's text cache (shapes vary with filter shapes)
      if (this.#names.size >= 4096) this.#names.clear();
      name = preparedName(text);
      this.#names.set(text, name);
    }
    return name;
  }
}

class PostgresExecutor implements SqlExecutor {
  readonly dialect = pgDialect;
  private readonly pool: pg.Pool;
  private readonly onQuery?: QueryObserver;
  private readonly names = new PreparedNames();

  constructor(pool: pg.Pool, onQuery?: QueryObserver) {
    this.pool = pool;
    this.onQuery = onQuery;
  }

  private config(s: Statement<unknown>): pg.QueryConfig {
    return preparesByName(s)
      ? { name: this.names.of(s.sql), text: s.sql, values: s.params }
      : { text: s.sql, values: s.params };
  }

  all<R>(kind: string, s: Statement<R>): Promise<R[]> {
    return timed(this.onQuery, kind, async () => (await this.pool.query(this.config(s))).rows as R[]);
  }

  /**
   * The pool's connections pipeline (node-postgres' `pipeline` option): BEGIN, every statement and, when no
   * statement's answer decides the outcome, COMMIT go out together and their answers come back in order, one round
   * trip. A statement that fails aborts the transaction: the ones after it fail too and COMMIT rolls back. When a
   * statement must return a row (`requireRow`, the tenant check), COMMIT waits for the answers (a second round
   * trip), unless the statement fails by itself without its row (`failsWithoutRow`: a write's next_tx).
   */
  transaction(kind: string, statements: Statement[], requireTenant?: string): Promise<StatementResult[]> {
    return timed(this.onQuery, kind, async () => {
      const checked: Statement[] =
        requireTenant === undefined
          ? statements
          : [
              {
                ...tenantExistsStatement(this.dialect, requireTenant),
                requireRow: "ERROR_CODE_TENANT_NOT_FOUND",
              },
              ...statements,
            ];
      const decided = checked.every((s) => s.requireRow === undefined || s.failsWithoutRow);
      const client = await this.pool.connect();
      try {
        const begin = client.query("BEGIN");
        const sent = checked.map((s) => client.query(this.config(s)));
        const commit = decided ? client.query("COMMIT") : undefined;
        const [began, ...answers] = await Promise.allSettled([begin, ...sent, ...(commit ? [commit] : [])]);
        if (began!.status === "rejected") throw began!.reason;
        // the first failure in statement order decides, as if they had run one by one
        const results: StatementResult[] = [];
        for (const [i, s] of checked.entries()) {
          const a = answers[i]!;
          if (a.status === "rejected") {
            const missing = s.failsWithoutRow && (a.reason as { code?: unknown }).code === DIVISION_BY_ZERO;
            throw missing ? new PembaError(s.requireRow!) : a.reason;
          }
          if (s.requireRow !== undefined && a.value.rowCount === 0) throw new PembaError(s.requireRow);
          results.push({ rows: a.value.rows as Row[], changes: a.value.rowCount ?? 0 });
        }
        if (commit === undefined) await client.query("COMMIT");
        else if (answers[checked.length]!.status === "rejected")
          throw (answers[checked.length] as PromiseRejectedResult).reason;
        return requireTenant === undefined ? results : results.slice(1);
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

export class PostgresStore extends SqlStore implements WriteNotices, WriteFeed {
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

  /** Writes and reads the tenant's feed in one transaction: the write holds the tenant's row lock (WriteFeed). */
  writeReadingFeed(tenantId: string, req: WriteRequest, after: Snap, limit: number): Promise<FeedRead> {
    return this.writeAndReadFeed(tenantId, req, after, limit);
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
      // the library's pipelining: a transaction's statements go out without waiting for each other's answers
      pipeline: true,
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
