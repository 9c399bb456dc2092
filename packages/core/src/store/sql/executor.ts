/** What the shared SQL store needs from a driver: run one statement, or several in one transaction. */
import { isPembaError, PembaError } from "../../errors.ts";
import type { MaybePromise } from "../types.ts";
import type { Dialect, Statement } from "./dialect.ts";
import type { Row } from "./rows.ts";

export interface StatementResult {
  rows: Row[];
  /** Rows inserted, updated or deleted. */
  changes: number;
}

/**
 * Reports the time one statement (or transaction) of a kind took, e.g. ("query_tuples", 0.0004); drivers that know
 * them add the rows read (D1: as D1 counts them; others: rows returned) and the statements sent (a transaction's
 * count, its tenant check included). Undefined when a call failed.
 */
export type QueryObserver = (kind: string, seconds: number, rowsRead?: number, statements?: number) => void;

/** A call's result -> [rows read, statements sent], for the observer. */
export type QueryMeasure<T> = (result: T) => [number, number];

export interface SqlExecutor {
  readonly dialect: Dialect;
  /** One statement; synchronous drivers answer with a plain array. */
  all<R>(kind: string, statement: Statement<R>): MaybePromise<R[]>;
  /**
   * Runs the statements in one transaction and returns each one's result. When `requireTenant` is given the
   * tenant must exist (checked first) or the call fails with ERROR_CODE_TENANT_NOT_FOUND and writes nothing.
   */
  transaction(kind: string, statements: Statement[], requireTenant?: string): Promise<StatementResult[]>;
  /**
   * Read statements sent together in ONE round trip (D1's batch: one request, one consistent view), where the driver
   * can; each statement's rows. Drivers without it run the statements one by one through `all`.
   */
  readBatch?(kind: string, statements: Statement[]): Promise<Row[][]>;
  /** One statement's rows as arrays of cells in the select list's order (no object per row), where the driver can. */
  allCells?(kind: string, statement: Statement): MaybePromise<unknown[][]>;
  close(): Promise<void>;
}

export function timed<T>(
  observer: QueryObserver | undefined,
  kind: string,
  run: () => T,
  measure?: QueryMeasure<Awaited<T>>,
): T {
  if (!observer) return run();
  const start = performance.now();
  const report = (result: Awaited<T> | undefined, ok: boolean) => {
    const seconds = (performance.now() - start) / 1000;
    if (measure === undefined || !ok) observer(kind, seconds);
    else observer(kind, seconds, ...measure(result as Awaited<T>));
  };
  const result = run();
  if (result instanceof Promise) {
    return result.then(
      (value) => {
        report(value, true);
        return value;
      },
      (e) => {
        report(undefined, false);
        throw e;
      },
    ) as T;
  }
  report(result as Awaited<T>, true);
  return result;
}

/** `all`'s measure: the rows it returned, one statement. */
export const measureRows: QueryMeasure<unknown[]> = (rows) => [rows.length, 1];

/**
 * Failures that say the database cannot be reached or cannot take the work now (it is down, restarting, out of
 * disk, or its file is read-only), rather than that the statement is wrong: a connection refused, reset or cut,
 * PostgreSQL's connection exceptions (08xxx), shutdown and startup (57P01-57P03), disk full (53100), SQLite's
 * SQLITE_FULL, SQLITE_READONLY and SQLITE_IOERR, D1's "Network connection lost".
 */
export function isDatabaseUnavailable(e: unknown): boolean {
  const code = String((e as { code?: unknown } | undefined)?.code ?? "");
  if (
    /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|08\w{3}|57P0[123]|53100|SQLITE_(FULL|READONLY|IOERR|CANTOPEN)\w*)$/.test(
      code,
    )
  )
    return true;
  const message = e instanceof Error ? e.message : String(e);
  return /Connection terminated|connection (is )?(closed|ended|lost)|Network connection lost|database or disk is full|attempt to write a readonly database|disk I\/O error|cannot connect to PostgreSQL/i.test(
    message,
  );
}

/**
 * Database failures surface as Permify's ERROR_CODE_SQL_EXECUTION: 503 (UNAVAILABLE) when the database cannot be
 * reached or cannot take the work now (the client may retry; nothing of a refused write was written unless the
 * connection was cut after the commit was sent), else 500. Our own errors pass through.
 */
export function asSqlError(e: unknown): PembaError {
  if (isPembaError(e)) return e;
  const reason = e instanceof Error ? e.message : String(e);
  if (isDatabaseUnavailable(e))
    return new PembaError("ERROR_CODE_SQL_EXECUTION", undefined, {
      grpcCode: 14,
      details: [{ reason: `database unavailable: ${reason}` }],
    });
  return new PembaError("ERROR_CODE_SQL_EXECUTION", undefined, { details: [{ reason }] });
}
