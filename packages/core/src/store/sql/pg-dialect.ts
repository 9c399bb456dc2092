/** PostgreSQL's dialect (see dialect.ts): lists and row sets bound as text arrays (`= ANY`, `unnest`). */
import { createHash } from "node:crypto";
import { sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { cells, type Dialect, list, P, StatementTexts } from "./dialect.ts";
import * as pgTables from "./pg-tables.ts";

const rows = (width: number) =>
  sql`(SELECT * FROM unnest(${list(cells(width).map(() => sql`${P}::text[]`))}) AS j(${list(cells(width))}))`;
const rowsParams = (values: string[][], width: number) =>
  Array.from({ length: width }, (_, i) => values.map((r) => r[i]));

/**
 * The name of a statement's server-side prepared statement: a hash of its text, so one text has one name on every
 * connection (node-postgres parses a named statement once per connection and then only binds and executes it) and
 * two texts never share one (node-postgres refuses a name reused for another text on a connection). Computed once
 * per shape, with its text (Statement.name); the driver decides which statements run by name (preparesByName).
 */
export function preparedName(text: string): string {
  return `pemba_${createHash("sha256").update(text).digest("base64url").slice(0, 40)}`;
}

/** A PostgreSQL dialect with its own rendered texts (tests compare a fresh one with the shared one). */
export function createPgDialect(): Dialect {
  const drizzle = new PgDialect();
  const texts = new StatementTexts((query) => drizzle.sqlToQuery(query), preparedName);
  return {
    name: "pg",
    tables: pgTables,
    maxParams: 65535,
    statement: (shape, build, params) => texts.statement(shape, build, params),
    keyList: (keys, width) => ({ shape: "unnest", rows: keys.length, params: rowsParams(keys, width) }),
    keyIn: (columns) => sql`(${list(columns)}) IN (SELECT * FROM ${rows(columns.length)} r)`,
    rows,
    rowsParams,
    inList: (column) => sql`${column} = ANY(${P}::text[])`,
    listParam: (values) => values,
    from: (table, alias) => sql`${table} ${alias}`,
  };
}

export const pgDialect: Dialect = createPgDialect();
