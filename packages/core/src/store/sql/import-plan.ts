/**
 * An import chunk inside ONE transaction, for drivers that run statements synchronously in process (better-sqlite3).
 * The chunk's rows are sorted in the live unique index's order (each insert then lands next to the previous one in
 * every index that leads with the entity), each keeping the id its line order gives it (lastId), and inserted
 * BATCH_ROWS rows a statement, each row unless a live row has
 * its key (ON CONFLICT DO NOTHING, through the live unique index). A statement that inserted fewer rows than it had
 * is looked at row by row: a row whose live row carries this chunk's transaction id was just inserted; any other
 * live row is the tenant's own, which is compared, then replaced, kept or reported (BulkImports in capabilities.ts).
 * The rows after the last full batch go one a statement. The chunk takes one transaction id.
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
  insertTuples: string;
  insertAttributes: string;
  liveTuple: string;
  markTuple: string;
  insertAttribute: string;
  liveAttribute: string;
  markAttribute: string;
}

const placeholders = (n: number): SQL => list(Array.from({ length: n }, () => sql`${P}`));

/** Rows a batched insert takes: 900 parameters for tuples, 810 for attributes (SQLite's limit is 999). */
export const BATCH_ROWS = 90;
const TUPLE_PARAMS = 10;
const ATTRIBUTE_PARAMS = 9;

/**
 * The ids a chunk's rows take: the rows after the table's last id (or the highest it ever gave, AUTOINCREMENT's
 * sqlite_sequence), in the chunk's line order whatever order they are inserted in, so an export (in id order) gives
 * them back in the order the dump had them.
 */
const lastId = (table: "tuples" | "attributes") =>
  `SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = '${table}'), 0), COALESCE((SELECT MAX(id) FROM ${table}), 0)) AS value`;
const valueRows = (width: number): SQL =>
  list(Array.from({ length: BATCH_ROWS }, () => sql`(${placeholders(width)})`));

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
  const tupleInsert = [t.id, ...tupleKey, t.createdTx, t.expiresAt];
  const attributeInsert = [a.id, a.tenantId, ...attributeColumns(a), a.createdTx, a.expiresAt];
  return {
    insertTuple: render(
      "import_insert_tuple",
      () =>
        sql`INSERT INTO ${t} (${list(tupleInsert.map(name))}) VALUES (${placeholders(TUPLE_PARAMS)}) ON CONFLICT DO NOTHING`,
      TUPLE_PARAMS,
    ),
    insertTuples: render(
      "import_insert_tuples",
      () =>
        sql`INSERT INTO ${t} (${list(tupleInsert.map(name))}) VALUES ${valueRows(TUPLE_PARAMS)} ON CONFLICT DO NOTHING`,
      TUPLE_PARAMS * BATCH_ROWS,
    ),
    insertAttributes: render(
      "import_insert_attributes",
      () =>
        sql`INSERT INTO ${a} (${list(attributeInsert.map(name))}) VALUES ${valueRows(ATTRIBUTE_PARAMS)} ON CONFLICT DO NOTHING`,
      ATTRIBUTE_PARAMS * BATCH_ROWS,
    ),
    liveTuple: render(
      "import_live_tuple",
      () =>
        sql`SELECT ${t.createdTx} AS ${sql.identifier("created_tx")}, ${t.expiresAt} AS ${sql.identifier("expires_at")} FROM ${t} WHERE ${keyIs(tupleKey.map((c) => sql`${c}`))} AND ${t.deletedTx} IS NULL`,
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
        sql`INSERT INTO ${a} (${list(attributeInsert.map(name))}) VALUES (${placeholders(ATTRIBUTE_PARAMS)}) ON CONFLICT DO NOTHING`,
      ATTRIBUTE_PARAMS,
    ),
    liveAttribute: render(
      "import_live_attribute",
      () =>
        sql`SELECT ${a.createdTx} AS ${sql.identifier("created_tx")}, ${a.valueType} AS ${sql.identifier("value_type")}, ${a.value} AS ${sql.identifier("value")}, ${a.expiresAt} AS ${sql.identifier("expires_at")} FROM ${a} WHERE ${keyIs(attributeKeyCols.map((c) => sql`${c}`))} AND ${a.deletedTx} IS NULL`,
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

/** Code-unit order of two strings (the dump's ids are compared as stored, not by locale). */
const order = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const tupleOrder = (x: ImportRow<Tuple>, y: ImportRow<Tuple>): number => {
  const a = x.row;
  const b = y.row;
  return (
    order(a.entity.type, b.entity.type) ||
    order(a.entity.id, b.entity.id) ||
    order(a.relation, b.relation) ||
    order(a.subject.type, b.subject.type) ||
    order(a.subject.id, b.subject.id) ||
    order(a.subject.relation, b.subject.relation)
  );
};

const attributeOrder = (x: ImportRow<Attribute>, y: ImportRow<Attribute>): number => {
  const a = x.row;
  const b = y.row;
  return (
    order(a.entity.type, b.entity.type) || order(a.entity.id, b.entity.id) || order(a.attribute, b.attribute)
  );
};

/** The positions of `rows`, in the order `by` sorts the rows. */
function inOrder<T>(rows: T[], by: (a: T, b: T) => number): number[] {
  return Array.from(rows.keys()).sort((a, b) => by(rows[a]!, rows[b]!));
}

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
  // reported in line order once the chunk is through (the rows go in index order); over the limit, the chunk
  // throws naming the first line past it, and its transaction rolls back
  const conflict = (line: number, key: string) => void result.conflicts.push({ line, key });

  const tupleParams = ({ row: r }: ImportRow<Tuple>, id: number, out: unknown[], at: number) => {
    out[at] = id;
    out[at + 1] = tenantId;
    out[at + 2] = r.entity.type;
    out[at + 3] = r.entity.id;
    out[at + 4] = r.relation;
    out[at + 5] = r.subject.type;
    out[at + 6] = r.subject.id;
    out[at + 7] = r.subject.relation;
    out[at + 8] = tx;
    out[at + 9] = r.expiresAt ?? null;
  };
  /** A row the batch it was in did not wholly insert: inserted by it (this chunk's tx), or the tenant's own. */
  const tupleAfterBatch = (p: ImportRow<Tuple>, id: number) => {
    const { row: r, line } = p;
    const params = new Array<unknown>(TUPLE_PARAMS);
    tupleParams(p, id, params, 0);
    const key = params.slice(1, 8);
    const live = db.get(x.liveTuple, key);
    if (live !== undefined && Number(live.created_tx) === tx) result.written++;
    else tupleExisting(r, line, key, params, live);
  };
  const tupleAlone = (p: ImportRow<Tuple>, id: number) => {
    const { row: r, line } = p;
    const params = new Array<unknown>(TUPLE_PARAMS);
    tupleParams(p, id, params, 0);
    if (db.run(x.insertTuple, params) === 1) {
      result.written++;
      return;
    }
    const key = params.slice(1, 8);
    tupleExisting(r, line, key, params, db.get(x.liveTuple, key));
  };
  const tupleExisting = (
    r: Tuple,
    line: number,
    key: unknown[],
    params: unknown[],
    live: Row | undefined,
  ) => {
    if (expiry(live?.expires_at) === r.expiresAt || opts.onConflict === "skip") result.unchanged++;
    else if (opts.onConflict === "fail") conflict(line, tupleKey(r));
    else {
      db.run(x.markTuple, [tx, ...key]);
      db.run(x.insertTuple, params);
      result.written++;
    }
  };
  const tupleBase = tuples.length === 0 ? 0 : Number(db.get(lastId("tuples"), [])?.value);
  const sortedTuples = inOrder(tuples, tupleOrder);
  const tupleBatch = new Array<unknown>(TUPLE_PARAMS * BATCH_ROWS);
  let i = 0;
  for (; i + BATCH_ROWS <= sortedTuples.length; i += BATCH_ROWS) {
    for (let j = 0; j < BATCH_ROWS; j++) {
      const k = sortedTuples[i + j]!;
      tupleParams(tuples[k]!, tupleBase + k + 1, tupleBatch, j * TUPLE_PARAMS);
    }
    const inserted = db.run(x.insertTuples, tupleBatch);
    if (inserted === BATCH_ROWS) result.written += BATCH_ROWS;
    else
      for (let j = 0; j < BATCH_ROWS; j++) {
        const k = sortedTuples[i + j]!;
        tupleAfterBatch(tuples[k]!, tupleBase + k + 1);
      }
  }
  for (; i < sortedTuples.length; i++) {
    const k = sortedTuples[i]!;
    tupleAlone(tuples[k]!, tupleBase + k + 1);
  }

  const attributeParams = (a: Attribute, value: string, id: number, out: unknown[], at: number) => {
    out[at] = id;
    out[at + 1] = tenantId;
    out[at + 2] = a.entity.type;
    out[at + 3] = a.entity.id;
    out[at + 4] = a.attribute;
    out[at + 5] = a.value.type;
    out[at + 6] = value;
    out[at + 7] = tx;
    out[at + 8] = a.expiresAt ?? null;
  };
  const attributeExisting = (
    a: Attribute,
    value: string,
    line: number,
    key: unknown[],
    params: unknown[],
    live: Row | undefined,
  ) => {
    const same =
      live?.value_type === a.value.type && live.value === value && expiry(live.expires_at) === a.expiresAt;
    if (same || opts.onConflict === "skip") result.unchanged++;
    else if (opts.onConflict === "fail") conflict(line, attributeKey(a));
    else {
      db.run(x.markAttribute, [tx, ...key]);
      db.run(x.insertAttribute, params);
      result.written++;
    }
  };
  const attributeAfterBatch = ({ row: a, line }: ImportRow<Attribute>, id: number) => {
    const value = JSON.stringify(a.value.data);
    const params = new Array<unknown>(ATTRIBUTE_PARAMS);
    attributeParams(a, value, id, params, 0);
    const key = params.slice(1, 5);
    const live = db.get(x.liveAttribute, key);
    if (live !== undefined && Number(live.created_tx) === tx) result.written++;
    else attributeExisting(a, value, line, key, params, live);
  };
  const attributeAlone = ({ row: a, line }: ImportRow<Attribute>, id: number) => {
    const value = JSON.stringify(a.value.data);
    const params = new Array<unknown>(ATTRIBUTE_PARAMS);
    attributeParams(a, value, id, params, 0);
    if (db.run(x.insertAttribute, params) === 1) {
      result.written++;
      return;
    }
    const key = params.slice(1, 5);
    attributeExisting(a, value, line, key, params, db.get(x.liveAttribute, key));
  };
  const attributeBase = attributes.length === 0 ? 0 : Number(db.get(lastId("attributes"), [])?.value);
  const sortedAttributes = inOrder(attributes, attributeOrder);
  const attributeBatch = new Array<unknown>(ATTRIBUTE_PARAMS * BATCH_ROWS);
  i = 0;
  for (; i + BATCH_ROWS <= sortedAttributes.length; i += BATCH_ROWS) {
    for (let j = 0; j < BATCH_ROWS; j++) {
      const k = sortedAttributes[i + j]!;
      const a = attributes[k]!.row;
      attributeParams(
        a,
        JSON.stringify(a.value.data),
        attributeBase + k + 1,
        attributeBatch,
        j * ATTRIBUTE_PARAMS,
      );
    }
    const inserted = db.run(x.insertAttributes, attributeBatch);
    if (inserted === BATCH_ROWS) result.written += BATCH_ROWS;
    else
      for (let j = 0; j < BATCH_ROWS; j++) {
        const k = sortedAttributes[i + j]!;
        attributeAfterBatch(attributes[k]!, attributeBase + k + 1);
      }
  }
  for (; i < sortedAttributes.length; i++) {
    const k = sortedAttributes[i]!;
    attributeAlone(attributes[k]!, attributeBase + k + 1);
  }

  result.conflicts.sort((a, b) => a.line - b.line);
  if (result.conflicts.length > opts.maxConflicts) {
    const c = result.conflicts[opts.maxConflicts]!;
    throw new PembaError(
      "ERROR_CODE_ALREADY_EXIST",
      `line ${c.line}: ${c.key} exists with another value or expiry`,
    );
  }
  if (result.written > 0) result.snap = tx;
  return result;
}
