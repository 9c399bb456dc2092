/** PostgreSQL's dialect (see dialect.ts): lists and row sets bound as text arrays (`= ANY`, `unnest`). */
import { sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { cells, type Dialect, list, P, StatementTexts } from "./dialect.ts";
import * as pgTables from "./pg-tables.ts";

const rows = (width: number) =>
  sql`(SELECT * FROM unnest(${list(cells(width).map(() => sql`${P}::text[]`))}) AS j(${list(cells(width))}))`;
const rowsParams = (values: string[][], width: number) =>
  Array.from({ length: width }, (_, i) => values.map((r) => r[i]));

/** A PostgreSQL dialect with its own rendered texts (tests compare a fresh one with the shared one). */
export function createPgDialect(): Dialect {
  const drizzle = new PgDialect();
  const texts = new StatementTexts((query) => drizzle.sqlToQuery(query));
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
    orderText: (column) => sql`${column} COLLATE "C"`,
  };
}

export const pgDialect: Dialect = createPgDialect();
