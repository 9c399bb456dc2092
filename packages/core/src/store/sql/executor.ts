/** What the shared SQL store needs from a driver: run one statement, or several in one transaction. */
import { isPembaError, PembaError } from "../../errors.ts";
import type { MaybePromise } from "../store.ts";
import type { Dialect } from "./dialect.ts";

export type Row = Record<string, unknown>;

export interface Statement {
  sql: string;
  params: unknown[];
}

export interface StatementResult {
  rows: Row[];
  /** Rows inserted, updated or deleted. */
  changes: number;
}

/** Reports the time one statement (or transaction) of a kind took, e.g. ("query_tuples", 0.0004). */
export type QueryObserver = (kind: string, seconds: number) => void;

export interface SqlExecutor {
  readonly dialect: Dialect;
  /** One statement; synchronous drivers answer with a plain array. */
  all(kind: string, sql: string, params: unknown[]): MaybePromise<Row[]>;
  /**
   * Runs the statements in one transaction and returns each one's result. When `requireTenant` is given the
   * tenant must exist (checked first) or the call fails with ERROR_CODE_TENANT_NOT_FOUND and writes nothing.
   */
  transaction(kind: string, statements: Statement[], requireTenant?: string): Promise<StatementResult[]>;
  close(): Promise<void>;
}

export function timed<T>(observer: QueryObserver | undefined, kind: string, run: () => T): T {
  if (!observer) return run();
  const start = performance.now();
  const result = run();
  if (result instanceof Promise) {
    return result.finally(() => observer(kind, (performance.now() - start) / 1000)) as T;
  }
  observer(kind, (performance.now() - start) / 1000);
  return result;
}

/** Database failures surface as Permify's ERROR_CODE_SQL_EXECUTION; our own errors pass through. */
export function asSqlError(e: unknown): PembaError {
  if (isPembaError(e)) return e;
  return new PembaError("ERROR_CODE_SQL_EXECUTION", undefined, {
    details: [{ reason: e instanceof Error ? e.message : String(e) }],
  });
}
