/**
 * Cloudflare D1 store: SQLite's tables and SQL (the shared SqlStore) over a D1 binding, through the D1 Sessions
 * API. Reads without a snap token go to the nearest replica (`first-unconstrained`); writes go to the primary
 * (`first-primary`), each one ONE `batch()` (D1 has no interactive transactions: the tenant check is a statement
 * of the batch); a write's D1 bookmark travels in the snap token, and a read carrying it opens its session at that
 * bookmark, so no replica older than the write answers it (`nearestReplica` reads at the nearest replica anyway,
 * for a lazy replica that lays the primary's changes over them). Statements stay within D1's limits (100 bound
 * parameters, 100 KB of SQL, 2 MB per value, 1000 queries per invocation); a statement over them fails before
 * it is sent (a value over 2 MB, reachable through a 4 MiB request body, as ERROR_CODE_VALIDATION).
 *
 * Sessions belong to one request: `sessions` returns the current request's (the Worker scopes them with
 * AsyncLocalStorage); without it, the store uses one set of sessions for its whole life (tests, cron jobs).
 */
import { getTableName, sql } from "drizzle-orm";
import { PembaError } from "../../errors.ts";
import type { NearestReplica, QueryBudget, SnapBookmarks } from "../capabilities.ts";
import { type Dialect, list, name, P, type Statement, sqliteDialectWith } from "../sql/dialect.ts";
import type { QueryObserver, SqlExecutor, StatementResult } from "../sql/executor.ts";
import { asSqlError, timed } from "../sql/executor.ts";
import type { Row } from "../sql/rows.ts";
import { SqlStore } from "../sql/sql-store.ts";
import {
  D1_LIMITS,
  type D1Database,
  type D1DatabaseSession,
  type D1Queryable,
  type D1Result,
} from "./d1-binding.ts";
import { APPLIED_MIGRATIONS_SQL, D1MigrationCheck } from "./d1-migrations.ts";

export type { D1Database } from "./d1-binding.ts";

/**
 * D1: at most 100 bound parameters per statement. A read statement holds at most two key lists (attribute reads by
 * id and by type) plus 3 other parameters each, so 45 per key list keeps every statement at or under 96.
 */
export const d1Dialect: Dialect = sqliteDialectWith(45, D1_LIMITS.maxParams);

/**
 * Fails the batch when the tenant does not exist: pemba_meta.value is NOT NULL, so inserting a NULL there aborts
 * the batch with a message naming that column (TENANT_MISSING_MESSAGE), which no other statement can produce.
 */
function requireTenantStatement(id: string): Statement {
  const { meta, tenants } = d1Dialect.tables;
  const build = () =>
    sql`INSERT INTO ${meta} (${list([name(meta.key), name(meta.value)])}) SELECT 'tenant_missing', NULL
      WHERE NOT EXISTS (SELECT 1 FROM ${tenants} WHERE ${tenants.id} = ${P})`;
  return d1Dialect.statement("require_tenant", build, [id]);
}
const TENANT_MISSING_MESSAGE = `${getTableName(d1Dialect.tables.meta)}.${d1Dialect.tables.meta.value.name}`;

/** The D1 sessions of one request, and how many queries it has sent. */
export class D1Sessions {
  readonly #db: D1Database;
  #readAfter: string | undefined;
  #reader: D1DatabaseSession | undefined;
  #nearest: D1Queryable | undefined;
  #primary: D1DatabaseSession | undefined;
  #wrote = false;
  /** Queries sent so far (each statement of a batch counts, as D1 counts them). */
  queries = 0;
  readonly maxQueries: number;

  constructor(db: D1Database, maxQueries = D1_LIMITS.maxQueriesPerInvocation) {
    this.#db = db;
    this.maxQueries = maxQueries;
  }

  /**
   * Later reads are answered by a database at least as new as `bookmark` (a write's, from its snap token). A read
   * session already opened (e.g. for the schema) is replaced by one starting at the bookmark.
   */
  readAfter(bookmark: string): void {
    if (this.#wrote) return;
    this.#readAfter = bookmark;
    if (this.#reader !== undefined) this.#reader = this.#db.withSession(bookmark);
  }

  /** The session reads go to: after a write of this request, the primary's (read your own write). */
  reader(): D1Queryable {
    if (this.#wrote && this.#primary) return this.#primary;
    this.#reader ??= this.#db.withSession(this.#readAfter ?? "first-unconstrained");
    return this.#reader;
  }

  /**
   * The session of reads at the nearest replica whatever bookmark the request carries (the reader's, when it was
   * opened before a bookmark, or it has none): the same one for the request's life, so its reads never go back.
   */
  nearest(): D1Queryable {
    this.#nearest ??=
      this.#readAfter === undefined ? this.reader() : this.#db.withSession("first-unconstrained");
    return this.#nearest;
  }

  writer(): D1Queryable {
    this.#primary ??= this.#db.withSession("first-primary");
    return this.#primary;
  }

  wrote(): void {
    this.#wrote = true;
  }

  /** The bookmark after this request's last write, for its snap token; undefined when it wrote nothing. */
  bookmark(): string | undefined {
    return this.#wrote ? (this.#primary?.getBookmark() ?? undefined) : undefined;
  }

  /** Queries this request may still send. */
  get left(): number {
    return this.maxQueries - this.queries;
  }

  count(n: number): void {
    if (this.queries + n > this.maxQueries) {
      throw new PembaError("ERROR_CODE_SQL_EXECUTION", undefined, {
        details: [{ reason: `D1 allows at most ${this.maxQueries} queries per Worker invocation` }],
      });
    }
    this.queries += n;
  }
}

const utf8 = new TextEncoder();

/** What travels as one bound value, by statement kind: named in the error of a value over D1's limit. */
const VALUE_OF_KIND: Record<string, string> = {
  write:
    "a write's tuples and attributes travel to D1 as one value: split the write or shorten its attribute values",
  write_schema: "the schema is stored as one value: split it or shorten it",
  write_bundles: "each bundle is stored as one value: shorten it",
};

/** Rejects a statement D1 would refuse, before sending it, with the limit it breaks. */
export function assertWithinD1Limits(sql: string, params: unknown[], kind = ""): void {
  const fail = (reason: string) => {
    throw new PembaError("ERROR_CODE_SQL_EXECUTION", undefined, { details: [{ reason }] });
  };
  if (params.length > D1_LIMITS.maxParams) {
    fail(`statement binds ${params.length} parameters; D1 allows ${D1_LIMITS.maxParams}`);
  }
  if (sql.length > D1_LIMITS.maxSqlBytes / 3 && utf8.encode(sql).length > D1_LIMITS.maxSqlBytes) {
    fail(`statement is over ${D1_LIMITS.maxSqlBytes} bytes of SQL, D1's limit`);
  }
  for (const param of params) {
    const bytes = valueBytes(param);
    if (bytes > D1_LIMITS.maxValueBytes) {
      const what = VALUE_OF_KIND[kind] ?? "shorten the request's values";
      throw new PembaError(
        "ERROR_CODE_VALIDATION",
        `value too large for D1: ${bytes} bytes, over D1's limit of ${D1_LIMITS.maxValueBytes} bytes per value; ${what}`,
      );
    }
  }
}

/** A bound value's size in bytes (strings as UTF-8), or 0 when it cannot reach D1's per-value limit. */
function valueBytes(value: unknown): number {
  if (typeof value === "string") {
    return value.length > D1_LIMITS.maxValueBytes / 3 ? utf8.encode(value).length : 0;
  }
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) return value.byteLength;
  return 0;
}

export interface D1StoreOptions {
  onQuery?: QueryObserver;
  /**
   * Apply pending migrations (default true): checked by the store's first reads in the same round trips (one more
   * statement in their batch), applied before the first read or write that needs them (D1MigrationCheck);
   * `wrangler d1 migrations apply` records them the same way.
   */
  migrate?: boolean;
  /** The current request's sessions (default: one set for the store's life). */
  sessions?: () => D1Sessions | undefined;
}

/** Where an executor's reads go: the request's reader session, or its nearest replica's (D1Sessions.nearest). */
type ReadRoute = "reader" | "nearest";

class D1Executor implements SqlExecutor {
  readonly dialect = d1Dialect;
  readonly #sessions: () => D1Sessions;
  readonly #onQuery?: QueryObserver;
  readonly #migrations: D1MigrationCheck;
  readonly #route: ReadRoute;

  constructor(
    sessions: () => D1Sessions,
    migrations: D1MigrationCheck,
    onQuery?: QueryObserver,
    route: ReadRoute = "reader",
  ) {
    this.#sessions = sessions;
    this.#migrations = migrations;
    this.#onQuery = onQuery;
    this.#route = route;
  }

  #readSession(sessions: D1Sessions): D1Queryable {
    return this.#route === "reader" ? sessions.reader() : sessions.nearest();
  }

  all<R>(kind: string, s: Statement<R>): Promise<R[]> {
    let rowsRead: number | undefined;
    return timed(
      this.#onQuery,
      kind,
      async () => {
        const [result] = await this.#read(kind, [s]);
        rowsRead = result!.meta?.rows_read;
        return result!.results as R[];
      },
      (rows) => [rowsRead ?? rows.length, 1],
    );
  }

  /** Reads in ONE D1 batch through the request's reader session (one round trip, one consistent view). */
  readBatch(kind: string, statements: Statement[]): Promise<Row[][]> {
    let rowsRead = 0;
    return timed(
      this.#onQuery,
      kind,
      async () => {
        const results = await this.#read(kind, statements);
        for (const r of results) rowsRead += r.meta?.rows_read ?? r.results.length;
        return results.map((r) => r.results as Row[]);
      },
      () => [rowsRead, statements.length],
    );
  }

  /**
   * Sends reads in one round trip through the executor's session (the request's reader, or its nearest replica's;
   * one statement: `all()`, several: a batch); while the migration check is open, its statement rides in front of them (D1MigrationCheck).
   */
  async #read(kind: string, statements: Statement<unknown>[]): Promise<D1Result[]> {
    for (const s of statements) assertWithinD1Limits(s.sql, s.params, kind);
    const check = !this.#migrations.settled;
    const sessions = this.#sessions();
    sessions.count(statements.length + (check ? 1 : 0));
    const db = this.#readSession(sessions);
    const prepared = statements.map((s) => db.prepare(s.sql).bind(...s.params));
    if (!check) {
      try {
        return prepared.length === 1 ? [await prepared[0]!.all()] : await db.batch(prepared);
      } catch (e) {
        throw asSqlError(e);
      }
    }
    let results: D1Result[];
    try {
      results = await db.batch([db.prepare(APPLIED_MIGRATIONS_SQL), ...prepared]);
    } catch {
      // no d1_migrations table (nothing migrated yet), or a failure of the read itself: sent again once migrated
      await this.#ensureMigrated(true);
      return this.#read(kind, statements);
    }
    if (this.#migrations.saw(results[0]!.results)) return results.slice(1);
    await this.#ensureMigrated(false);
    return this.#read(kind, statements);
  }

  async #ensureMigrated(atReplica: boolean): Promise<void> {
    try {
      await this.#migrations.ensure(atReplica);
    } catch (e) {
      throw asSqlError(e);
    }
  }

  transaction(kind: string, statements: Statement[], requireTenant?: string): Promise<StatementResult[]> {
    let rowsRead = 0;
    let sent = 0;
    return timed(
      this.#onQuery,
      kind,
      async () => {
        const all =
          requireTenant === undefined ? statements : [requireTenantStatement(requireTenant), ...statements];
        if (all.length === 0) return [];
        for (const s of all) assertWithinD1Limits(s.sql, s.params, kind);
        await this.#ensureMigrated(true);
        const sessions = this.#sessions();
        sessions.count(all.length);
        const db = sessions.writer();
        let results: Awaited<ReturnType<D1Queryable["batch"]>>;
        try {
          results = await db.batch(all.map((s) => db.prepare(s.sql).bind(...s.params)));
        } catch (e) {
          const message = e instanceof Error ? e.message : String(e);
          if (requireTenant !== undefined && message.includes(TENANT_MISSING_MESSAGE)) {
            throw new PembaError("ERROR_CODE_TENANT_NOT_FOUND");
          }
          throw asSqlError(e);
        }
        sessions.wrote();
        sent = all.length;
        for (const r of results) rowsRead += r.meta.rows_read ?? r.results.length;
        const out = results.map((r) => ({ rows: r.results, changes: r.meta.changes ?? 0 }));
        return requireTenant === undefined ? out : out.slice(1);
      },
      () => [rowsRead, sent],
    );
  }

  async close(): Promise<void> {}
}

/** The database read at the request's nearest replica (D1Store.nearestReplica): its reads only. */
class D1NearestReads extends SqlStore {
  readonly kind = "d1" as const;
}

export class D1Store extends SqlStore implements SnapBookmarks, QueryBudget, NearestReplica {
  readonly kind = "d1" as const;
  readonly #sessions: () => D1Sessions;
  readonly #nearest: D1NearestReads;
  readonly #migrations: D1MigrationCheck;

  private constructor(sessions: () => D1Sessions, migrations: D1MigrationCheck, onQuery?: QueryObserver) {
    super(new D1Executor(sessions, migrations, onQuery));
    this.#sessions = sessions;
    this.#nearest = new D1NearestReads(new D1Executor(sessions, migrations, onQuery, "nearest"));
    this.#migrations = migrations;
  }

  /** Sends nothing: the migration check rides on the store's first reads (D1MigrationCheck). */
  static async open(db: D1Database, opts: D1StoreOptions = {}): Promise<D1Store> {
    const own = new D1Sessions(db);
    const scoped = opts.sessions;
    const migrations = new D1MigrationCheck(db, opts.migrate === false);
    return new D1Store(scoped ? () => scoped() ?? own : () => own, migrations, opts.onQuery);
  }

  /** Applies pending migrations now (what the first read or write does otherwise): a look at a replica first. */
  migrate(): Promise<void> {
    return this.#migrations.ensure();
  }

  /** The D1 bookmark after this request's write, carried in its snap token (one database: any tenant's). */
  consistencyBookmark(_tenantId?: string): string | undefined {
    return this.#sessions().bookmark();
  }

  /** This request's reads start at a replica at least as new as `bookmark` (from a snap token). */
  readAfterBookmark(_tenantId: string, bookmark: string): void {
    this.#sessions().readAfter(bookmark);
  }

  /** The current request's sessions and the database as its nearest replica has it (NearestReplica). */
  nearestReplica(): { request: object; store: SqlStore } {
    return { request: this.#sessions(), store: this.#nearest };
  }

  /** Queries the current request (Worker invocation) may still send before D1's cap. */
  queriesLeft(): number {
    return this.#sessions().left;
  }
}
