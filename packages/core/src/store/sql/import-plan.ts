/**
 * An import chunk row by row inside ONE transaction, for drivers that run statements synchronously in process
 * (better-sqlite3), where a prepared statement per row costs less than any row set: each row is inserted unless a
 * live row has its key (ON CONFLICT DO NOTHING, through the live unique index); only when one has is that row read
 * and compared, then replaced, kept or reported (BulkImports in capabilities.ts). The chunk takes one transaction id.
 */
import { type SQL, sql } from "drizzle-orm";
import { PembaError } from "../../errors.ts";
import { type Attribute, attributeKey, type Tuple, tupleKey } from "../../model.ts";
import type { ImportChunkResult, ImportRow } from "../capabilities.ts";
import { type Dialect, list, name, P } from "./dialect.ts";
import { attributeColumns, attributeKeyColumns, tupleColumns } from "./fragments.ts";
import type { Row } from "./rows.ts";
import { nextTxStatement } from "./write-plan.ts";

/** Runs one statement text with its parameters: `run` answers the rows changed, `get` the first row. */
export interface RowStatements {
  run(text: string, params: unknown[]): number;
  get(text: string, params: unknown[]): Row | undefined;
}

export interface ImportChunkOptions {
  onConflict: "touch" | "skip" | "fail";
  maxConflicts: number;
}

/** The statement texts of an import. */
interface ImportTexts {
  insertTuple: string;
  liveTuple: string;
  markTuple: string;
  insertAttribute: string;
  liveAttribute: string;
  markAttribute: string;
}

const placeholders = (n: number): SQL => list(Array.from({ length: n }, () => sql`${P}`));

/** The texts, each rendered on its first use by the dialect's own cache of texts by shape (dialect.ts). */
function importTexts(d: Dialect): ImportTexts {
  const { tuples: t, attributes: a } = d.tables;
  const render = (shape: string, build: () => SQL, n: number) =>
    d.statement(shape, build, new Array(n).fill(null)).sql;
  const keyIs = (columns: SQL[]) =>
    sql.join(
      columns.map((c) => sql`${c} = ${P}`),
      sql` AND `,
    );
  const tupleKey = [t.tenantId, ...tupleColumns(t)];
  const attributeKeyCols = [a.tenantId, ...attributeKeyColumns(a)];
  const tupleInsert = [...tupleKey, t.createdTx, t.expiresAt];
  const attributeInsert = [a.tenantId, ...attributeColumns(a), a.createdTx, a.expiresAt];
  return {
    insertTuple: render(
      "import_insert_tuple",
      () =>
        sql`INSERT INTO ${t} (${list(tupleInsert.map(name))}) VALUES (${placeholders(9)}) ON CONFLICT DO NOTHING`,
      9,
    ),
    liveTuple: render(
      "import_live_tuple",
      () =>
        sql`SELECT ${t.expiresAt} AS ${sql.identifier("expires_at")} FROM ${t} WHERE ${keyIs(tupleKey.map((c) => sql`${c}`))} AND ${t.deletedTx} IS NULL`,
      7,
    ),
    markTuple: render(
      "import_mark_tuple",
      () =>
        sql`UPDATE ${t} SET ${name(t.deletedTx)} = ${P} WHERE ${keyIs(tupleKey.map((c) => sql`${c}`))} AND ${t.deletedTx} IS NULL`,
      8,
    ),
    insertAttribute: render(
      "import_insert_attribute",
      () =>
        sql`INSERT INTO ${a} (${list(attributeInsert.map(name))}) VALUES (${placeholders(8)}) ON CONFLICT DO NOTHING`,
      8,
    ),
    liveAttribute: render(
      "import_live_attribute",
      () =>
        sql`SELECT ${a.valueType} AS ${sql.identifier("value_type")}, ${a.value} AS ${sql.identifier("value")}, ${a.expiresAt} AS ${sql.identifier("expires_at")} FROM ${a} WHERE ${keyIs(attributeKeyCols.map((c) => sql`${c}`))} AND ${a.deletedTx} IS NULL`,
      4,
    ),
    markAttribute: render(
      "import_mark_attribute",
      () =>
        sql`UPDATE ${a} SET ${name(a.deletedTx)} = ${P} WHERE ${keyIs(attributeKeyCols.map((c) => sql`${c}`))} AND ${a.deletedTx} IS NULL`,
      5,
    ),
  };
}

const expiry = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : Number(v));

/** Inside the caller's transaction: takes a transaction id, applies the chunk, answers what it did. */
export function importChunkRows(
  d: Dialect,
  db: RowStatements,
  tenantId: string,
  tuples: ImportRow<Tuple>[],
  attributes: ImportRow<Attribute>[],
  opts: ImportChunkOptions,
  now: number,
): ImportChunkResult {
  const x = importTexts(d);
  const result: ImportChunkResult = { snap: undefined, written: 0, unchanged: 0, conflicts: [] };
  let tx = 0;
  for (const s of nextTxStatement(d, tenantId, now)) {
    const row = db.get(s.sql, s.params);
    if (tx === 0) tx = Number(row?.value);
  }
  const conflict = (line: number, key: string) => {
    result.conflicts.push({ line, key });
    if (result.conflicts.length > opts.maxConflicts)
      throw new PembaError(
        "ERROR_CODE_ALREADY_EXIST",
        `line ${line}: ${key} exists with another value or expiry`,
      );
  };
  for (const { row: r, line } of tuples) {
    const e = r.expiresAt ?? null;
    const key = [
      tenantId,
      r.entity.type,
      r.entity.id,
      r.relation,
      r.subject.type,
      r.subject.id,
      r.subject.relation,
    ];
    if (db.run(x.insertTuple, [...key, tx, e]) === 1) {
      result.written++;
      continue;
    }
    const live = db.get(x.liveTuple, key);
    if (expiry(live?.expires_at) === r.expiresAt || opts.onConflict === "skip") result.unchanged++;
    else if (opts.onConflict === "fail") conflict(line, tupleKey(r));
    else {
      db.run(x.markTuple, [tx, ...key]);
      db.run(x.insertTuple, [...key, tx, e]);
      result.written++;
    }
  }
  for (const { row: a, line } of attributes) {
    const key = [tenantId, a.entity.type, a.entity.id, a.attribute];
    const value = JSON.stringify(a.value.data);
    const e = a.expiresAt ?? null;
    if (db.run(x.insertAttribute, [...key, a.value.type, value, tx, e]) === 1) {
      result.written++;
      continue;
    }
    const live = db.get(x.liveAttribute, key);
    const same =
      live?.value_type === a.value.type && live.value === value && expiry(live.expires_at) === a.expiresAt;
    if (same || opts.onConflict === "skip") result.unchanged++;
    else if (opts.onConflict === "fail") conflict(line, attributeKey(a));
    else {
      db.run(x.markAttribute, [tx, ...key]);
      db.run(x.insertAttribute, [...key, a.value.type, value, tx, e]);
      result.written++;
    }
  }
  if (result.written > 0) result.snap = tx;
  return result;
}
