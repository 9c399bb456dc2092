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
import type { Attribute, Tuple } from "../../model.ts";
import type {
  BulkImports,
  FeedRead,
  ImportChunkResult,
  ImportRow,
  LineExports,
  WriteFeed,
  WriteListener,
  WriteNotices,
} from "../capabilities.ts";
import type { Statement } from "../sql/dialect.ts";
import type { QueryObserver, SqlExecutor, StatementResult } from "../sql/executor.ts";
import { asSqlError, isDatabaseUnavailable, timed } from "../sql/executor.ts";
import { tenantExistsStatement } from "../sql/meta-plan.ts";
import { PG_MIGRATIONS_URL } from "../sql/migrations-location.ts";
import { pgDialect } from "../sql/pg-dialect.ts";
import type { Row } from "../sql/rows.ts";
import { SqlStore } from "../sql/sql-store.ts";
import { WRITES_CHANNEL } from "../sql/write-plan.ts";
import type { Snap, WriteRequest } from "../store.ts";
import { copyLines, ODD_EXPIRY } from "./postgres-export.ts";
import { importChunkByCopy } from "./postgres-import.ts";

export const PG_MIGRATIONS = fileURLToPath(PG_MIGRATIONS_URL);

export interface PostgresStoreOptions {
  onQuery?: QueryObserver;
  /** Pool size (default 10). */
  max?: number;
  /** Apply pending migrations at open (default true); false for a read-only hot standby, which refuses DDL. */
  migrate?: boolean;
}

const INT8_OID = 20;
/** SQLSTATE of a failsWithoutRow statement without its row. */
const DIVISION_BY_ZERO = "22012";

/** The most values a list or row-set parameter of a statement prepared by name holds (see preparesByName). */
export const NAMED_MAX_LIST = 16;

/**
 * Whether a statement runs as a named prepared statement (parsed once per connection; PostgreSQL may then cache a
 * generic plan for it, `plan_cache_mode=auto`) or as node-postgres' unnamed statement (parsed and planned for its own
 * values at every execution). Named: every list parameter (a key list, a row set's column) holds at most NAMED_MAX_LIST
 * values, e.g. a 1-row write, a check, a feed read. Unnamed: a larger list, e.g. a 1,000-row write. One text binds
 * lists of any length (unnest), and a plan cached for a few values can cost many times more for thousands (a 1,000-row
 * write runs several times slower on a generic plan cached during 1-row writes); a parse and a plan cost little next to
 * a large statement's execution, so large ones never share a cached plan.
 */
export function preparesByName(s: Statement<unknown>): boolean {
  return s.params.every((p) => !Array.isArray(p) || p.length <= NAMED_MAX_LIST);
}

/** The parts of node-postgres' connection (pg/lib/connection.js) a submittable writes protocol messages to. */
interface PgConnection {
  readonly stream: { cork?(): void; uncork?(): void };
  readonly parsedStatements: Record<string, string | undefined>;
  readonly submittedNamedStatements: Record<string, string | undefined>;
  parse(query: { text: string; name: string; types?: unknown[] }): void;
  bind(config: {
    portal: string;
    statement: string;
    values: unknown[];
    valueMapper: (v: unknown) => unknown;
  }): void;
  describe(msg: { type: "P"; name: string }): void;
  execute(config: { portal: string; rows: number }): void;
  sync(): void;
}

/** node-postgres' own mapping of a parameter value to its wire text (arrays as array literals, dates, buffers). */
const prepareValue = (pg as unknown as { utils: { prepareValue(v: unknown): unknown } }).utils.prepareValue;

/** One pg result per statement, as node-postgres' Query collects them (one Result, or an array past the first). */
interface PgResults {
  rows: Row[];
  rowCount: number | null;
}

/**
 * Statements sent as ONE series of extended-protocol messages with ONE Sync at its end: Parse (unnamed statements
 * only) / Bind / Describe / Execute per statement, then Sync, in one corked socket write. PostgreSQL runs what comes
 * before a Sync as one implicit transaction ("Pipelining" in the protocol chapter of its manual): committed at the
 * Sync; after an error it skips every message up to the Sync and rolls back. A subclass of node-postgres' Query (the
 * client accepts custom submittables in pipeline mode only as Query instances), whose answers it collects as it
 * collects a multi-statement query's: one Result per CommandComplete.
 */
class OneSync extends pg.Query {
  readonly #configs: pg.QueryConfig[];

  constructor(configs: pg.QueryConfig[]) {
    super({ text: "" });
    this.#configs = configs;
  }

  override submit = (connection: pg.Connection): void => {
    const c = connection as unknown as PgConnection;
    c.stream.cork?.();
    try {
      for (const q of this.#configs) {
        if (q.name === undefined) c.parse({ text: q.text, name: "" });
        c.bind({ portal: "", statement: q.name ?? "", values: q.values ?? [], valueMapper: prepareValue });
        c.describe({ type: "P", name: "" });
        c.execute({ portal: "", rows: 0 });
      }
      c.sync();
    } finally {
      c.stream.uncork?.();
    }
  };
}

/** A submittable's answer: node-postgres' Query emits `end` with its results, or `error`. */
function answer(query: pg.Query): Promise<PgResults | PgResults[]> {
  return new Promise((resolve, reject) => {
    query.once("end", resolve as (r: unknown) => void);
    query.once("error", reject);
  });
}

/**
 * Parses a named statement on a connection without running it: Parse and Sync. node-postgres records it as parsed
 * (on ParseComplete, by the query's name and text) as for its own named queries, so later OneSyncs bind it by name.
 */
class PrepareOnly extends pg.Query {
  readonly #name: string;
  readonly #text: string;

  constructor(name: string, text: string) {
    super({ name, text });
    this.#name = name;
    this.#text = text;
  }

  override submit = (connection: pg.Connection): void => {
    const c = connection as unknown as PgConnection;
    c.stream.cork?.();
    try {
      c.parse({ text: this.#text, name: this.#name });
      c.submittedNamedStatements[this.#name] = this.#text;
      c.sync();
    } finally {
      c.stream.uncork?.();
    }
  };
}

class PostgresExecutor implements SqlExecutor {
  readonly dialect = pgDialect;
  private readonly pool: pg.Pool;
  private readonly onQuery?: QueryObserver;

  constructor(pool: pg.Pool, onQuery?: QueryObserver) {
    this.pool = pool;
    this.onQuery = onQuery;
  }

  private config(s: Statement<unknown>): pg.QueryConfig {
    // the name comes with the text from the dialect's cache (pg-dialect.ts preparedName)
    return preparesByName(s) && s.name !== undefined
      ? { name: s.name, text: s.sql, values: s.params }
      : { text: s.sql, values: s.params };
  }

  allCells(kind: string, s: Statement): Promise<unknown[][]> {
    return timed(this.onQuery, kind, async () => {
      try {
        return (await this.pool.query({ ...this.config(s), rowMode: "array" })).rows as unknown[][];
      } catch (e) {
        throw asSqlError(e);
      }
    });
  }

  all<R>(kind: string, s: Statement<R>): Promise<R[]> {
    return timed(this.onQuery, kind, async () => {
      try {
        return (await this.pool.query(this.config(s))).rows as R[];
      } catch (e) {
        throw asSqlError(e);
      }
    });
  }

  /**
   * A transaction whose outcome no answer decides (no statement must return a row, or it fails by itself without
   * it: a write's next_tx) goes out as ONE Sync (OneSync): PostgreSQL runs the statements up to a Sync as one
   * implicit transaction, committed at the Sync, rolled back with all of them when one fails. One write on the
   * socket, one answer back; no BEGIN or COMMIT. Otherwise (a `requireRow` statement, the tenant check): BEGIN and
   * the statements are pipelined (node-postgres' `pipeline` option), and COMMIT waits for their answers, a second
   * round trip.
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
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch (e) {
        throw asSqlError(e);
      }
      // a connection the failure cut is closed rather than handed to the next request
      let broken: Error | undefined;
      try {
        const results = decided ? await this.#oneSync(client, checked) : await this.#checked(client, checked);
        return requireTenant === undefined ? results : results.slice(1);
      } catch (e) {
        if (isDatabaseUnavailable(e)) broken = e instanceof Error ? e : new Error(String(e));
        throw asSqlError(e);
      } finally {
        client.release(broken);
      }
    });
  }

  /** The statements in one implicit transaction (OneSync); a statement's failure is the transaction's. */
  async #oneSync(client: pg.PoolClient, statements: Statement[]): Promise<StatementResult[]> {
    if (statements.length === 0) return [];
    const configs = statements.map((s) => this.config(s));
    const connection = (client as unknown as { connection: PgConnection }).connection;
    // a named statement new to this connection: parsed first, by node-postgres' own bookkeeping (PrepareOnly)
    const prepares = configs
      .filter(
        (c) =>
          c.name !== undefined &&
          connection.parsedStatements[c.name] === undefined &&
          connection.submittedNamedStatements[c.name] === undefined,
      )
      .map((c) => new PrepareOnly(c.name!, c.text));
    const batch = new OneSync(configs);
    const answers = [...prepares, batch].map((q) => {
      const answered = answer(q);
      client.query(q);
      return answered;
    });
    const settled = await Promise.allSettled(answers);
    const failed = settled.find((a) => a.status === "rejected");
    if (failed !== undefined) {
      const reason = failed.reason as { code?: unknown };
      const missing = statements.find((s) => s.failsWithoutRow);
      if (missing !== undefined && reason.code === DIVISION_BY_ZERO)
        throw new PembaError(missing.requireRow!);
      throw reason;
    }
    const results = (settled.at(-1) as PromiseFulfilledResult<PgResults | PgResults[]>).value;
    const all = Array.isArray(results) ? results : [results];
    if (all.length !== statements.length)
      throw new Error(`one transaction of ${statements.length} statements answered ${all.length} results`);
    return all.map((r) => ({ rows: r.rows, changes: r.rowCount ?? 0 }));
  }

  /** BEGIN and the statements pipelined; COMMIT once every `requireRow` statement returned its row. */
  async #checked(client: pg.PoolClient, statements: Statement[]): Promise<StatementResult[]> {
    try {
      const begin = client.query("BEGIN");
      const sent = statements.map((s) => client.query(this.config(s)));
      const [began, ...answers] = await Promise.allSettled([begin, ...sent]);
      if (began!.status === "rejected") throw began!.reason;
      // the first failure in statement order decides, as if they had run one by one
      const results: StatementResult[] = [];
      for (const [i, s] of statements.entries()) {
        const a = answers[i]!;
        if (a.status === "rejected") throw a.reason;
        if (s.requireRow !== undefined && a.value.rowCount === 0) throw new PembaError(s.requireRow);
        results.push({ rows: a.value.rows as Row[], changes: a.value.rowCount ?? 0 });
      }
      await client.query("COMMIT");
      return results;
    } catch (e) {
      await client.query("ROLLBACK").catch(() => {});
      throw e;
    }
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

export class PostgresStore extends SqlStore implements WriteNotices, WriteFeed, BulkImports, LineExports {
  readonly kind = "postgres" as const;
  readonly #notices: WriteNoticeConnection;
  readonly #url: string;
  /** Imports' own connection, opened by the first: COPY streams cannot run on the pool's pipelined connections. */
  #imports: pg.Pool | undefined;
  /** Exports' connections (a COPY stream holds its connection to its end), opened by the first. */
  #exports: pg.Pool | undefined;

  private constructor(exec: PostgresExecutor, url: string) {
    super(exec);
    this.#url = url;
    this.#notices = new WriteNoticeConnection(url);
  }

  /** An import chunk through COPY into staging tables and one merge per table (postgres-import.ts). */
  async importChunk(
    tenantId: string,
    tuples: ImportRow<Tuple>[],
    attributes: ImportRow<Attribute>[],
    opts: { onConflict: "touch" | "skip" | "fail"; maxConflicts: number; dryRun: boolean },
  ): Promise<ImportChunkResult> {
    this.#imports ??= new pg.Pool({ connectionString: this.#url, max: 1 });
    const client = await this.#imports.connect();
    try {
      return await importChunkByCopy(client, tenantId, tuples, attributes, opts);
    } catch (e) {
      throw asSqlError(e);
    } finally {
      client.release();
    }
  }

  /** A table's dump lines, written by the server in one COPY (postgres-export.ts). */
  async exportLines(
    tenantId: string,
    snap: Snap,
    table: "tuples" | "attributes",
  ): Promise<AsyncIterable<Uint8Array> | undefined> {
    const check: Statement<{ odd: boolean }> = { sql: ODD_EXPIRY, params: [tenantId] };
    const [{ odd }] = (await this.exec.all("export_odd_expiry", check)) as [{ odd: boolean }];
    if (odd) return undefined;
    this.#exports ??= new pg.Pool({ connectionString: this.#url, max: 4, idleTimeoutMillis: 10_000 });
    const exports = this.#exports;
    return (async function* () {
      let client: pg.PoolClient;
      try {
        client = await exports.connect();
      } catch (e) {
        throw asSqlError(e);
      }
      try {
        yield* copyLines(client, table, tenantId, snap);
      } catch (e) {
        throw asSqlError(e);
      }
    })();
  }

  /** Hears every committed write of the database, this process's and other processes' (LISTEN/NOTIFY). */
  onWrite(listener: WriteListener): Promise<void> {
    return this.#notices.add(listener);
  }

  /** Writes and reads the tenant's feed in one transaction: the write holds the tenant's row lock (WriteFeed). */
  writeReadingFeed(tenantId: string, req: WriteRequest, after: Snap): Promise<FeedRead> {
    return this.writeAndReadFeed(tenantId, req, after);
  }

  override async close(): Promise<void> {
    await this.#notices.close();
    await this.#imports?.end();
    await this.#exports?.end();
    await super.close();
  }

  /** Connects to `url` (postgres:// or postgresql://) and applies the migrations. */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: opts.max ?? 10,
      // A connection once opened stays open (node-postgres closes idle ones after 10 s by default). Under a steady
      // load with bursts, the connections only a burst needs would otherwise close between bursts and the next
      // burst would wait for new ones: a TCP connect, a new server process, and every named statement parsed and
      // planned again on it, all on the path of the reads that are already queued.
      idleTimeoutMillis: 0,
      // the library's pipelining: a transaction's statements go out without waiting for each other's answers
      pipeline: true,
      types: {
        getTypeParser: ((oid: number, format?: string) =>
          oid === INT8_OID
            ? Number
            : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
      },
    });
    // An idle connection the server cuts (a restart, an outage) is an 'error' event of the pool: without a listener
    // it would end the process. The pool drops that connection and opens a new one when next asked.
    pool.on("error", () => {});
    // so is a connection cut while a request holds it: its statement fails with the error (503), and the connection
    // is closed on release; the event itself must not end the process either
    pool.on("connect", (client) => client.on("error", () => {}));
    try {
      // Connect first: a connection failure inside the migrator surfaces only as drizzle's
      // `Failed query: CREATE SCHEMA ... "drizzle"`, hiding ECONNREFUSED or a missing database.
      try {
        (await pool.connect()).release();
      } catch (e) {
        throw connectionError(url, e);
      }
      if (opts.migrate !== false) await migrate(drizzle(pool), { migrationsFolder: PG_MIGRATIONS });
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
