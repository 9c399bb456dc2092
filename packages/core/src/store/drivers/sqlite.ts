/**
 * The embedded default store: SQLite through better-sqlite3 (WAL mode). better-sqlite3 is synchronous, so engine
 * reads answer with plain values, and a write transaction runs start to end without yielding.
 *
 * Lock waits: SQLite's busy timeout waits synchronously, which would stop the whole event loop while another
 * connection (another process) holds the write lock. So the busy timeout is short (BUSY_TIMEOUT_MS) and a write
 * that finds the database locked is retried with an asynchronous backoff for up to LOCK_WAIT_MS before it fails:
 * other requests are served meanwhile.
 */
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { PembaError } from "../../errors.ts";
import type { Attribute, Tuple } from "../../model.ts";
import type { BulkImports, ImportChunkResult, ImportRow } from "../capabilities.ts";
import { type Statement, sqliteDialect } from "../sql/dialect.ts";
import type { QueryObserver, SqlExecutor, StatementResult } from "../sql/executor.ts";
import { asSqlError, timed } from "../sql/executor.ts";
import { importChunkRows, type RowStatements } from "../sql/import-plan.ts";
import { tenantExistsStatement } from "../sql/meta-plan.ts";
import { SQLITE_MIGRATIONS_URL } from "../sql/migrations-location.ts";
import type { Row } from "../sql/rows.ts";
import { SqlStore } from "../sql/sql-store.ts";
import type { AttributeQuery, Snap, SubjectTupleQuery, TupleQuery } from "../store.ts";

export const SQLITE_MIGRATIONS = fileURLToPath(SQLITE_MIGRATIONS_URL);

/** SQLite's own (synchronous) wait for a lock, per statement. */
export const BUSY_TIMEOUT_MS = 5;
/** How long a write waits, asynchronously, for another connection's write lock before failing. */
export const LOCK_WAIT_MS = 5000;
const BACKOFF_FIRST_MS = 2;
const BACKOFF_MAX_MS = 50;

const isBusy = (e: unknown): boolean =>
  typeof (e as { code?: unknown })?.code === "string" &&
  (e as { code: string }).code.startsWith("SQLITE_BUSY");

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface SqliteStoreOptions {
  onQuery?: QueryObserver;
}

/** "sqlite:///abs/path", "sqlite://rel/path", "sqlite:path" or a plain path -> the file path. */
export function sqlitePath(url: string): string {
  if (url.startsWith("sqlite://")) return url.slice("sqlite://".length);
  if (url.startsWith("sqlite:")) return url.slice("sqlite:".length);
  return url;
}

class BetterSqliteExecutor implements SqlExecutor {
  readonly dialect = sqliteDialect;
  private readonly db: Database.Database;
  private readonly onQuery?: QueryObserver;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(db: Database.Database, onQuery?: QueryObserver) {
    this.db = db;
    this.onQuery = onQuery;
  }

  private prepare(sql: string): Database.Statement {
    let st = this.statements.get(sql);
    if (!st) {
      // statement texts vary with batch sizes and filter shapes; keep the cache bounded
      if (this.statements.size >= 4096) this.statements.clear();
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  private runOne(s: Statement<unknown>): StatementResult {
    const st = this.prepare(s.sql);
    if (st.reader) {
      const rows = st.all(...s.params) as Row[];
      return { rows, changes: rows.length };
    }
    return { rows: [], changes: st.run(...s.params).changes };
  }

  /** Statements prepared in raw mode (rows as arrays): their own objects, as raw mode is a statement's setting. */
  private readonly rawStatements = new Map<string, Database.Statement>();

  allCells(kind: string, s: Statement): unknown[][] {
    let st = this.rawStatements.get(s.sql);
    if (st === undefined) {
      if (this.rawStatements.size >= 64) this.rawStatements.clear();
      st = this.db.prepare(s.sql).raw(true);
      this.rawStatements.set(s.sql, st);
    }
    const raw = st;
    return timed(this.onQuery, kind, () => raw.all(...s.params) as unknown[][]);
  }

  all<R>(kind: string, s: Statement<R>): R[] {
    return timed(this.onQuery, kind, () => this.runOne(s).rows as R[]);
  }

  async transaction(
    kind: string,
    statements: Statement[],
    requireTenant?: string,
  ): Promise<StatementResult[]> {
    const run = this.db.transaction(() => {
      if (requireTenant !== undefined) {
        const found = this.runOne(tenantExistsStatement(this.dialect, requireTenant)).rows;
        if (found.length === 0) throw new PembaError("ERROR_CODE_TENANT_NOT_FOUND");
      }
      return statements.map((s) => this.runOne(s));
    });
    const started = performance.now();
    for (let wait = BACKOFF_FIRST_MS; ; wait = Math.min(wait * 2, BACKOFF_MAX_MS)) {
      try {
        return timed(this.onQuery, kind, () => run.immediate());
      } catch (e) {
        if (!isBusy(e) || performance.now() - started >= LOCK_WAIT_MS) throw asSqlError(e);
      }
      await sleep(wait);
    }
  }

  /**
   * `work` inside one immediate transaction, with statements prepared once and run per row (an import chunk); the
   * transaction rolls back when `work` throws or `keep` says no (a dry run, or a chunk that changed nothing).
   */
  async rowTransaction<T>(
    kind: string,
    work: (db: RowStatements) => T,
    keep: (result: T) => boolean,
  ): Promise<T> {
    const rows: RowStatements = {
      run: (text, params) => this.prepare(text).run(...params).changes,
      get: (text, params) => {
        const st = this.prepare(text);
        if (st.reader) return st.get(...params) as Row | undefined;
        st.run(...params);
        return undefined;
      },
    };
    const rollback = new RolledBack<T>();
    const run = this.db.transaction(() => {
      const result = work(rows);
      if (!keep(result)) {
        rollback.result = result;
        throw rollback;
      }
      return result;
    });
    const started = performance.now();
    for (let wait = BACKOFF_FIRST_MS; ; wait = Math.min(wait * 2, BACKOFF_MAX_MS)) {
      try {
        return timed(this.onQuery, kind, () => run.immediate());
      } catch (e) {
        if (e === rollback) return rollback.result as T;
        if (!isBusy(e) || performance.now() - started >= LOCK_WAIT_MS) throw asSqlError(e);
      }
      await sleep(wait);
    }
  }

  /** SqliteStore.bulkLoad. */
  bulkLoad(): void {
    this.db.pragma("cache_size = -16384");
    const empty = (table: string) => this.db.prepare(`SELECT 1 FROM ${table} LIMIT 1`).get() === undefined;
    let deferred = false;
    try {
      deferred = this.db
        .transaction(() => {
          if (!(empty("tuples") && empty("attributes"))) return false;
          deferIndexes(this.db);
          return true;
        })
        .immediate();
    } catch (e) {
      // another connection is writing: the database is not being filled by this import alone
      if (!isBusy(e)) throw asSqlError(e);
    }
    if (deferred) this.db.pragma("synchronous = OFF");
  }

  /** SqliteStore.bulkLoadDone. */
  bulkLoadDone(): void {
    restoreIndexes(this.db);
  }

  async close(): Promise<void> {
    this.statements.clear();
    this.rawStatements.clear();
    if (this.db.open) {
      // an import that stopped on an error between bulkLoad and bulkLoadDone
      restoreIndexes(this.db);
      this.db.pragma("optimize");
      this.db.close();
    }
  }
}

/**
 * Where an import into an empty database keeps the definitions of the indexes it dropped (name, CREATE statement
 * as sqlite_master had it) until it builds them again. A plain table outside the migrations: it exists only while
 * such an import runs (or after one was killed), and whoever opens the file next builds the indexes it lists.
 */
const DEFERRED_INDEXES = "pemba_deferred_indexes";

/**
 * Drops the non-unique indexes of tuples and attributes, recording their definitions in DEFERRED_INDEXES, inside the
 * caller's transaction. The unique indexes stay: the import's ON CONFLICT finds a tenant's live rows through them.
 */
function deferIndexes(db: Database.Database): void {
  const indexes = db
    .prepare(
      "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('tuples', 'attributes') AND sql IS NOT NULL AND sql NOT LIKE 'CREATE UNIQUE INDEX%' ORDER BY name",
    )
    .all() as { name: string; sql: string }[];
  db.exec(`CREATE TABLE IF NOT EXISTS ${DEFERRED_INDEXES} (name TEXT PRIMARY KEY, sql TEXT NOT NULL)`);
  const keep = db.prepare(`INSERT INTO ${DEFERRED_INDEXES} (name, sql) VALUES (?, ?)`);
  for (const i of indexes) {
    keep.run(i.name, i.sql);
    db.exec(`DROP INDEX "${i.name.replaceAll('"', '""')}"`);
  }
}

/**
 * Builds the indexes DEFERRED_INDEXES lists and drops that table, in one transaction (each index is built from the
 * rows at once, a sort, not row by row). Answers whether there was anything to build.
 */
function restoreIndexes(db: Database.Database): boolean {
  const listed = () =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(DEFERRED_INDEXES) !==
    undefined;
  if (!listed()) return false;
  db.transaction(() => {
    if (!listed()) return;
    const indexes = db.prepare(`SELECT sql FROM ${DEFERRED_INDEXES} ORDER BY name`).all() as {
      sql: string;
    }[];
    for (const i of indexes) db.exec(i.sql);
    db.exec(`DROP TABLE ${DEFERRED_INDEXES}`);
  }).immediate();
  return true;
}

/** Thrown out of a transaction to roll it back, carrying the answer. */
class RolledBack<T> {
  result: T | undefined;
}

export class SqliteStore extends SqlStore implements BulkImports {
  readonly kind = "sqlite" as const;
  readonly #rows: BetterSqliteExecutor;

  private constructor(exec: BetterSqliteExecutor) {
    super(exec);
    this.#rows = exec;
  }

  /** An import chunk row by row in one transaction (import-plan.ts); nothing is committed when nothing changed. */
  importChunk(
    tenantId: string,
    tuples: ImportRow<Tuple>[],
    attributes: ImportRow<Attribute>[],
    opts: { onConflict: "touch" | "skip" | "fail"; maxConflicts: number; dryRun: boolean },
  ): Promise<ImportChunkResult> {
    return this.#rows.rowTransaction(
      "import",
      (db) => {
        if (db.get(tenantExistsStatement(sqliteDialect, tenantId).sql, [tenantId]) === undefined)
          throw new PembaError("ERROR_CODE_TENANT_NOT_FOUND");
        return importChunkRows(sqliteDialect, db, tenantId, tuples, attributes, opts, Date.now());
      },
      (r) => !opts.dryRun && r.written > 0,
    );
  }

  /**
   * For `pemba import`: 16 MB of page cache (the index pages a sorted chunk touches stay in memory between its
   * statements), and when the database has no tuples and no attributes at all (a restore, a migration into a new
   * file) synchronous=OFF: commits and WAL checkpoints stop waiting for the disk. A killed process loses nothing
   * the OS has; only an OS crash or power loss could leave that new file damaged, and the import is re-run into a
   * new file from the dump.
   *
   * Into such an empty database the non-unique indexes of tuples and attributes are also dropped for the load and
   * built once from the loaded rows by bulkLoadDone (or by close, when the import stopped on an error). Their
   * definitions are kept in the file, in the transaction that drops them, so after a kill -9 whoever opens the file
   * next (`SqliteStore.open`: the re-run import, a server) builds them before anything else. The unique indexes
   * stay, so conflicts and a resumed import's rows are found as always.
   */
  bulkLoad(): void {
    this.#rows.bulkLoad();
  }

  /** After the import's last chunk: builds the indexes bulkLoad dropped. */
  bulkLoadDone(): void {
    this.#rows.bulkLoadDone();
  }

  // better-sqlite3 answers synchronously: narrow the engine read types for callers that know the driver
  override headSnap(tenantId: string): Snap {
    return super.headSnap(tenantId) as Snap;
  }
  override assertSnapReadable(tenantId: string, snap: Snap): void {
    super.assertSnapReadable(tenantId, snap);
  }
  override queryTuples(tenantId: string, snap: Snap, queries: TupleQuery[], at?: number): Tuple[] {
    return super.queryTuples(tenantId, snap, queries, at) as Tuple[];
  }
  override querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at?: number,
  ): Tuple[] {
    return super.querySubjectTuples(tenantId, snap, queries, at) as Tuple[];
  }
  override queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at?: number,
  ): Attribute[] {
    return super.queryAttributes(tenantId, snap, queries, at) as Attribute[];
  }
  override listObjectIds(tenantId: string, snap: Snap, type: string, at?: number): string[] {
    return super.listObjectIds(tenantId, snap, type, at) as string[];
  }

  /** Opens (creating if needed) and migrates the database file at `url` (see `sqlitePath`). */
  static open(url: string, opts: SqliteStoreOptions = {}): SqliteStore {
    const db = new Database(sqlitePath(url));
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    // migrations run once at startup, before any request: they may wait for the lock synchronously
    db.pragma(`busy_timeout = ${LOCK_WAIT_MS}`);
    // indexes an import into this file dropped and was killed before building (bulkLoad); before the migrations,
    // which may name them
    restoreIndexes(db);
    migrate(drizzle(db), { migrationsFolder: SQLITE_MIGRATIONS });
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    return new SqliteStore(new BetterSqliteExecutor(db, opts.onQuery));
  }
}
