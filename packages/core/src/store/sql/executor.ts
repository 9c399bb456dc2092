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

/** Database failures surface as Permify's ERROR_CODE_SQL_EXECUTION; our own errors pass through. */
export function asSqlError(e: unknown): PembaError {
  if (isPembaError(e)) return e;
  return new PembaError("ERROR_CODE_SQL_EXECUTION", undefined, {
    details: [{ reason: e instanceof Error ? e.message : String(e) }],
  });
}
