/**
 * The few SQL differences between SQLite/libSQL and PostgreSQL. Statements are written with `?` placeholders
 * (the PostgreSQL executor numbers them). Lists and row sets are bound as ONE parameter each (a JSON text for
 * SQLite's json_each, arrays for PostgreSQL's unnest) so a whole batch of queries is one statement.
 */

export interface Fragment {
  sql: string;
  params: unknown[];
}

export interface Dialect {
  readonly name: "sqlite" | "pg";
  /** `col IN (<values>)` bound as one parameter. */
  inList(column: string, values: string[]): Fragment;
  /** A subquery with text columns c0..c{width-1}, one row per entry of `rows`. */
  rows(width: number, rows: string[][]): Fragment;
  /** `(columns) IN <rows>`: the batch's keys as one condition the lookup index can drive. */
  keyIn(columns: string[], rows: string[][]): Fragment;
  /** `table alias`, pinned to `index` where the planner needs it (SQLite has no statistics without ANALYZE). */
  table(table: string, alias: string, index: string): string;
  /** Most bound parameters one statement may have. */
  readonly maxParams: number;
  /** ORDER BY expression for a text column in byte order. */
  orderText(column: string): string;
}

const columns = (width: number) => Array.from({ length: width }, (_, i) => `c${i}`);

/**
 * SQLite's dialect with `(columns) IN (VALUES ...)` for key lists of at most `maxValuesParams` parameters: bound
 * VALUES are several times faster than json_each for the usual small batch; json_each (one parameter) takes
 * bigger batches, so a statement stays under the engine's parameter limit.
 */
export function sqliteDialectWith(maxValuesParams: number, maxParams: number): Dialect {
  const dialect: Dialect = {
    name: "sqlite",
    maxParams,
    inList: (column, values) => ({
      sql: `${column} IN (SELECT value FROM json_each(?))`,
      params: [JSON.stringify(values)],
    }),
    rows: (width, rows) => ({
      sql: `(SELECT ${columns(width)
        .map((c, i) => `j.value->>${i} AS ${c}`)
        .join(", ")} FROM json_each(?) j)`,
      params: [JSON.stringify(rows)],
    }),
    keyIn: (cols, rows) => {
      if (rows.length === 0) return { sql: "1 = 0", params: [] };
      if (rows.length * cols.length <= maxValuesParams) {
        const tuple = `(${cols.map(() => "?").join(", ")})`;
        return {
          sql: `(${cols.join(", ")}) IN (VALUES ${rows.map(() => tuple).join(", ")})`,
          params: rows.flat(),
        };
      }
      const source = dialect.rows(cols.length, rows);
      return { sql: `(${cols.join(", ")}) IN (SELECT * FROM ${source.sql} r)`, params: source.params };
    },
    table: (table, alias, index) => `${table} ${alias} INDEXED BY ${index}`,
    orderText: (column) => column,
  };
  return dialect;
}

/** SQLite and libSQL: up to 999 bound parameters per statement (SQLite's historical default limit). */
export const sqliteDialect: Dialect = sqliteDialectWith(999, 999);

export const pgDialect: Dialect = {
  name: "pg",
  maxParams: 65535,
  inList: (column, values) => ({ sql: `${column} = ANY(?::text[])`, params: [values] }),
  rows: (width, rows) => ({
    sql: `(SELECT * FROM unnest(${columns(width)
      .map(() => "?::text[]")
      .join(", ")}) AS j(${columns(width).join(", ")}))`,
    params: columns(width).map((_, i) => rows.map((r) => r[i])),
  }),
  keyIn: (cols, rows) => {
    const source = pgDialect.rows(cols.length, rows);
    return { sql: `(${cols.join(", ")}) IN (SELECT * FROM ${source.sql} r)`, params: source.params };
  },
  table: (table, alias) => `${table} ${alias}`,
  orderText: (column) => `${column} COLLATE "C"`,
};
