/**
 * The part of Cloudflare's D1 binding API the D1 store uses (the shapes of @cloudflare/workers-types' D1Database,
 * declared here so core needs no Workers types package), and D1's documented per-statement limits.
 */

export interface D1Result {
  results: Record<string, unknown>[];
  meta: {
    changes?: number;
    rows_read?: number;
    rows_written?: number;
    served_by_primary?: boolean;
    served_by_region?: string;
  };
}

export interface D1PreparedStatement {
  bind(...values: unknown[]): D1PreparedStatement;
  all(): Promise<D1Result>;
}

/** What a D1 database and a D1 session both answer. */
export interface D1Queryable {
  prepare(sql: string): D1PreparedStatement;
  /** Runs the statements in order as ONE implicit transaction: all of them, or none when one fails. */
  batch(statements: D1PreparedStatement[]): Promise<D1Result[]>;
}

/** A D1 Sessions API session: every query of it sees the database at least as new as the previous one. */
export interface D1DatabaseSession extends D1Queryable {
  /** The position after the latest query of the session; null before the first. */
  getBookmark(): string | null;
}

export interface D1Database extends D1Queryable {
  /**
   * `"first-unconstrained"` (the first query may go to any replica), `"first-primary"` (the first query goes to the
   * primary), or a bookmark (the session starts at a replica at least as new as it).
   */
  withSession(constraintOrBookmark?: string): D1DatabaseSession;
}

/** D1's limits (developers.cloudflare.com/d1/platform/limits). */
export const D1_LIMITS = {
  /** Bound parameters per statement. */
  maxParams: 100,
  /** Bytes of SQL text per statement. */
  maxSqlBytes: 100_000,
  /** Bytes of one string or BLOB value (and of a table row). */
  maxValueBytes: 2_000_000,
  /** Queries (each statement of a batch counts) per Worker invocation on the paid plan. */
  maxQueriesPerInvocation: 1000,
};
