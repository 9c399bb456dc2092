/**
 * Statements are drizzle `sql` templates over the table definitions (sqlite-tables.ts, pg-tables.ts: the one
 * source of every table and column name), with a placeholder (`P`) for every value, rendered by the dialect's
 * drizzle renderer. A template is rendered ONCE per dialect and shape (what varies: which parts it has, how many
 * keys a VALUES list holds) and its text reused, because rendering costs more than running a read
 * (loadtest/bench-sql-plans.ts). Lists and row sets are bound as ONE parameter each (a JSON text for SQLite's
 * json_each, arrays for PostgreSQL's unnest) so a whole batch of queries is one statement; short key lists on
 * SQLite are bound VALUES.
 */
import { type Column, Placeholder, type SQL, type SQLChunk, sql, type Table } from "drizzle-orm";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import type { ErrorCode } from "../../errors.ts";
import type * as pgTables from "./pg-tables.ts";
import type { Row } from "./rows.ts";
import * as sqliteTables from "./sqlite-tables.ts";

/** The tables a dialect's statements name: the same names and columns in both files. */
export type Tables = typeof sqliteTables | typeof pgTables;

/** The placeholder of every value; parameters bind in the order the placeholders appear. */
export const P = sql.placeholder("p");

declare const rowType: unique symbol;

/** A statement ready to run: its text in the dialect's syntax and its parameters in placeholder order. */
export interface Statement<R = Row> {
  readonly sql: string;
  readonly params: unknown[];
  /** Inside a transaction: when the statement returns no row, the transaction fails with this error. */
  readonly requireRow?: ErrorCode;
  /**
   * With requireRow: instead of returning no row the statement fails (division by zero, SQLSTATE 22012), aborting
   * its transaction, so a pipelined transaction sends COMMIT with it (nothing commits); reported as requireRow.
   */
  readonly failsWithoutRow?: true;
  /** Its text's name as a server-side prepared statement, where the dialect names texts (PostgreSQL). */
  readonly name?: string;
  /** Type only: the rows it returns. */
  readonly [rowType]?: R;
}

/** A batch's keys as the dialect binds them: `shape` names the form (part of the statement's shape). */
export interface KeyList {
  readonly shape: string;
  readonly rows: number;
  readonly params: unknown[];
}

export interface Dialect {
  readonly name: "sqlite" | "pg";
  readonly tables: Tables;
  /** Most bound parameters one statement may have. */
  readonly maxParams: number;
  /**
   * The statement `build()` renders, with `params`; `shape` names the template (every statement kind and variant
   * its own), which is rendered on its first use only.
   */
  statement<R = Row>(shape: string, build: () => SQL, params: unknown[]): Statement<R>;
  /** How `rows` (each `width` values) are bound as a key list. */
  keyList(rows: string[][], width: number): KeyList;
  /** `(columns) IN <keys>`: the batch's keys as one condition the lookup index can drive. */
  keyIn(columns: Column[], keys: KeyList): SQL;
  /** A subquery with text columns c0..c{width-1}, one row per entry of the rows `rowsParams` binds. */
  rows(width: number): SQL;
  rowsParams(rows: string[][], width: number): unknown[];
  /** `column IN <list>`, the list bound as the one parameter `listParam` makes. */
  inList(column: Column): SQL;
  listParam(values: string[]): unknown;
  /** `table alias`, pinned to `index` where the planner needs it (SQLite has no statistics without ANALYZE). */
  from(table: Table, alias: Table, index: string): SQL;
}

/** Column names of a derived table (`rows`), and its columns' references. */
export const cells = (width: number): SQLChunk[] =>
  Array.from({ length: width }, (_, i) => sql.identifier(`c${i}`));

/** `a, b, c` */
export const list = (items: SQLChunk[]): SQL => sql.join(items, sql`, `);

/** A column's bare name (INSERT column lists, SET targets, RETURNING). */
export const name = (column: Column): SQLChunk => sql.identifier(column.name);

/** The texts of one dialect's statements by shape, rendered on first use. */
export class StatementTexts {
  readonly #texts = new Map<string, { sql: string; params: number; name?: string }>();
  readonly #render: (query: SQL) => { sql: string; params: unknown[] };
  readonly #nameOf: ((text: string) => string) | undefined;

  /** `nameOf`: the name of a text's prepared statement, computed once per shape with its text (PostgreSQL). */
  constructor(render: (query: SQL) => { sql: string; params: unknown[] }, nameOf?: (text: string) => string) {
    this.#render = render;
    this.#nameOf = nameOf;
  }

  statement<R>(shape: string, build: () => SQL, params: unknown[]): Statement<R> {
    let text = this.#texts.get(shape);
    if (text === undefined) {
      const rendered = this.#render(build());
      // every value goes through `params`: a value inside the template would be rendered into the shared text
      if (!rendered.params.every((p) => p instanceof Placeholder))
        throw new Error(`statement ${shape}: a value inside the template`);
      text = { sql: rendered.sql, params: rendered.params.length, name: this.#nameOf?.(rendered.sql) };
      // shapes vary with batch sizes and filter shapes; keep the cache bounded
      if (this.#texts.size >= 4096) this.#texts.clear();
      this.#texts.set(shape, text);
    }
    if (params.length !== text.params)
      throw new Error(`statement ${shape}: ${params.length} parameters for ${text.params} placeholders`);
    return { sql: text.sql, params, name: text.name };
  }
}

/**
 * SQLite's dialect with `(columns) IN (VALUES ...)` for key lists of at most `maxValuesParams` parameters: bound
 * VALUES are several times faster than json_each for the usual small batch; json_each (one parameter) takes
 * bigger batches, so a statement stays under the engine's parameter limit.
 */
export function sqliteDialectWith(maxValuesParams: number, maxParams: number): Dialect {
  const drizzle = new SQLiteSyncDialect();
  const texts = new StatementTexts((query) => drizzle.sqlToQuery(query));
  const rows = (width: number) =>
    sql`(SELECT ${list(cells(width).map((c, i) => sql`j.value->>${sql.raw(String(i))} AS ${c}`))} FROM json_each(${P}) j)`;
  return {
    name: "sqlite",
    tables: sqliteTables,
    maxParams,
    statement: (shape, build, params) => texts.statement(shape, build, params),
    keyList: (keys, width) => {
      if (keys.length === 0) return { shape: "none", rows: 0, params: [] };
      if (keys.length * width <= maxValuesParams) {
        return { shape: `values${keys.length}`, rows: keys.length, params: keys.flat() };
      }
      return { shape: "json", rows: keys.length, params: [JSON.stringify(keys)] };
    },
    keyIn: (columns, keys) => {
      if (keys.shape === "none") return sql`1 = 0`;
      if (keys.shape === "json") return sql`(${list(columns)}) IN (SELECT * FROM ${rows(columns.length)} r)`;
      const tuple = sql`(${list(columns.map(() => sql`${P}`))})`;
      return sql`(${list(columns)}) IN (VALUES ${list(Array.from({ length: keys.rows }, () => tuple))})`;
    },
    rows,
    rowsParams: (values) => [JSON.stringify(values)],
    inList: (column) => sql`${column} IN (SELECT value FROM json_each(${P}))`,
    listParam: (values) => JSON.stringify(values),
    from: (table, alias, index) => sql`${table} ${alias} INDEXED BY ${sql.identifier(index)}`,
  };
}

/** SQLite and libSQL: up to 999 bound parameters per statement (SQLite's historical default limit). */
export const sqliteDialect: Dialect = sqliteDialectWith(999, 999);
