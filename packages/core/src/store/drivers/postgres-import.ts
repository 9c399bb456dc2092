/**
 * PostgreSQL's import chunk (BulkImports): the rows go into temporary staging tables with COPY (pg-copy-streams:
 * one stream of text rows, no parameters, no statement per row), then ONE merge statement per table does the rest
 * inside the same transaction: the staged rows whose live row differs are found (and marked deleted under
 * "touch"), and `INSERT ... SELECT ... ON CONFLICT DO NOTHING` writes every staged row without a live one. Both
 * find live rows through the live unique index, one probe per staged row. The inserts go first, under a savepoint:
 * when they write every staged row, no row had a live one and nothing is left to compare.
 */
import { once } from "node:events";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { PembaError } from "../../errors.ts";
import { type Attribute, attributeKey, type Tuple, tupleKey } from "../../model.ts";
import type { ImportChunkResult, ImportRow } from "../capabilities.ts";
import { pgDialect } from "../sql/pg-dialect.ts";
import { nextTxStatement } from "../sql/write-plan.ts";

/** COPY's text format: backslash, tab, newline and carriage return escaped; `\N` is NULL. */
const text = (v: string): string =>
  /[\\\t\n\r]/.test(v)
    ? v.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r")
    : v;
const nullable = (v: number | undefined): string => (v === undefined ? "\\N" : String(v));

const STAGE_TUPLES = "pemba_import_tuples";
const STAGE_ATTRIBUTES = "pemba_import_attributes";

const CREATE_STAGES = `
  CREATE TEMP TABLE IF NOT EXISTS ${STAGE_TUPLES} (line bigint, entity_type text, entity_id text, relation text,
    subject_type text, subject_id text, subject_relation text, expires_at bigint) ON COMMIT DELETE ROWS;
  CREATE TEMP TABLE IF NOT EXISTS ${STAGE_ATTRIBUTES} (line bigint, entity_type text, entity_id text, attribute text,
    value_type text, value text, expires_at bigint) ON COMMIT DELETE ROWS`;

const TUPLE_KEY = ["entity_type", "entity_id", "relation", "subject_type", "subject_id", "subject_relation"];
const ATTRIBUTE_KEY = ["entity_type", "entity_id", "attribute"];
const on = (key: string[]) => key.map((c) => `t.${c} = s.${c}`).join(" AND ");

/**
 * Staged rows whose live row differs: their lines (and, under "touch", that live row marked deleted). The live row
 * is found per staged row by a LATERAL subquery with LIMIT 1 (one probe of the live unique index each): the planner
 * can neither flatten it into a join nor scan the tenant's rows, whatever its statistics say of the staging table.
 */
function differing(
  table: string,
  stage: string,
  key: string[],
  columns: string,
  differs: string,
  mark: boolean,
): string {
  const live = `SELECT t.id, ${columns} FROM ${table} t WHERE t.tenant_id = $1 AND ${on(key)} AND t.deleted_tx IS NULL LIMIT 1`;
  const found = `SELECT s.line, l.id FROM ${stage} s CROSS JOIN LATERAL (${live}) l WHERE ${differs}`;
  if (!mark) return `SELECT line FROM (${found}) d ORDER BY line`;
  return `WITH d AS (${found}), m AS (UPDATE ${table} t SET deleted_tx = currval('pemba_tx_ids') FROM d WHERE t.id = d.id) SELECT line FROM d ORDER BY line`;
}

/** In line order: each row's id follows its line, so an export gives the rows back in the dump's order. */
const INSERT_TUPLES = `INSERT INTO tuples (tenant_id, ${TUPLE_KEY.join(", ")}, created_tx, expires_at)
  SELECT $1, ${TUPLE_KEY.map((c) => `s.${c}`).join(", ")}, currval('pemba_tx_ids'), s.expires_at FROM ${STAGE_TUPLES} s
  ORDER BY s.line ON CONFLICT (tenant_id, ${TUPLE_KEY.join(", ")}) WHERE deleted_tx IS NULL DO NOTHING`;
const INSERT_ATTRIBUTES = `INSERT INTO attributes (tenant_id, ${ATTRIBUTE_KEY.join(", ")}, value_type, value, created_tx, expires_at)
  SELECT $1, ${ATTRIBUTE_KEY.map((c) => `s.${c}`).join(", ")}, s.value_type, s.value, currval('pemba_tx_ids'), s.expires_at
  FROM ${STAGE_ATTRIBUTES} s ORDER BY s.line ON CONFLICT (tenant_id, ${ATTRIBUTE_KEY.join(", ")}) WHERE deleted_tx IS NULL DO NOTHING`;

async function copyRows(client: pg.PoolClient, table: string, rows: Iterable<string>): Promise<void> {
  const stream = client.query(copyFrom(`COPY ${table} FROM STDIN`));
  const done = once(stream, "finish");
  let batch = "";
  for (const row of rows) {
    batch += row;
    if (batch.length >= 1 << 16) {
      if (!stream.write(batch)) await once(stream, "drain");
      batch = "";
    }
  }
  stream.end(batch);
  await done;
}

/** The staged rows without a live row, inserted: how many. */
async function insertStaged(
  client: pg.PoolClient,
  tenantId: string,
  tuples: number,
  attributes: number,
): Promise<number> {
  let written = 0;
  if (tuples > 0) written += (await client.query(INSERT_TUPLES, [tenantId])).rowCount ?? 0;
  if (attributes > 0) written += (await client.query(INSERT_ATTRIBUTES, [tenantId])).rowCount ?? 0;
  return written;
}

export async function importChunkByCopy(
  client: pg.PoolClient,
  tenantId: string,
  tuples: ImportRow<Tuple>[],
  attributes: ImportRow<Attribute>[],
  opts: { onConflict: "touch" | "skip" | "fail"; maxConflicts: number; dryRun: boolean },
): Promise<ImportChunkResult> {
  const result: ImportChunkResult = { snap: undefined, written: 0, unchanged: 0, conflicts: [] };
  await client.query("BEGIN");
  try {
    await client.query(CREATE_STAGES);
    const [next] = nextTxStatement(pgDialect, tenantId, Date.now());
    let snap: number;
    try {
      snap = Number((await client.query(next!.sql, next!.params)).rows[0].value);
    } catch (e) {
      if ((e as { code?: string }).code === "22012") throw new PembaError("ERROR_CODE_TENANT_NOT_FOUND");
      throw e;
    }
    const mark = opts.onConflict === "touch";
    const lineKey = new Map<number, string>();
    if (tuples.length > 0) {
      await copyRows(
        client,
        STAGE_TUPLES,
        tuples.map(({ row: t, line }) => {
          lineKey.set(line, tupleKey(t));
          return `${line}\t${text(t.entity.type)}\t${text(t.entity.id)}\t${text(t.relation)}\t${text(t.subject.type)}\t${text(t.subject.id)}\t${text(t.subject.relation)}\t${nullable(t.expiresAt)}\n`;
        }),
      );
    }
    if (attributes.length > 0) {
      await copyRows(
        client,
        STAGE_ATTRIBUTES,
        attributes.map(({ row: a, line }) => {
          lineKey.set(line, attributeKey(a));
          return `${line}\t${text(a.entity.type)}\t${text(a.entity.id)}\t${text(a.attribute)}\t${a.value.type}\t${text(JSON.stringify(a.value.data))}\t${nullable(a.expiresAt)}\n`;
        }),
      );
    }
    // Every staged row new (a restore, a migration into an empty tenant): the inserts alone are the whole merge, and
    // the comparison's probe per row is not needed. A row the tenant has makes them roll back to the comparison.
    if (opts.onConflict !== "skip" && !opts.dryRun) {
      await client.query("SAVEPOINT pemba_import_new");
      const inserted = await insertStaged(client, tenantId, tuples.length, attributes.length);
      if (inserted > 0 && inserted === tuples.length + attributes.length) {
        await client.query("COMMIT");
        return { ...result, snap, written: inserted };
      }
      await client.query("ROLLBACK TO SAVEPOINT pemba_import_new");
    }
    const differ: number[] = [];
    if (tuples.length > 0 && opts.onConflict !== "skip") {
      const differs = "l.expires_at IS DISTINCT FROM s.expires_at";
      const q = differing("tuples", STAGE_TUPLES, TUPLE_KEY, "t.expires_at", differs, mark);
      for (const r of (await client.query(q, [tenantId])).rows) differ.push(Number(r.line));
    }
    if (attributes.length > 0 && opts.onConflict !== "skip") {
      const differs =
        "(l.value_type, l.value, l.expires_at) IS DISTINCT FROM (s.value_type, s.value, s.expires_at)";
      const columns = "t.value_type, t.value, t.expires_at";
      const q = differing("attributes", STAGE_ATTRIBUTES, ATTRIBUTE_KEY, columns, differs, mark);
      for (const r of (await client.query(q, [tenantId])).rows) differ.push(Number(r.line));
    }
    if (opts.onConflict === "fail") {
      for (const line of differ.sort((a, b) => a - b))
        result.conflicts.push({ line, key: lineKey.get(line) ?? "" });
      if (result.conflicts.length > opts.maxConflicts) {
        const c = result.conflicts[opts.maxConflicts]!;
        throw new PembaError(
          "ERROR_CODE_ALREADY_EXIST",
          `line ${c.line}: ${c.key} exists with another value or expiry`,
        );
      }
    }
    result.written = await insertStaged(client, tenantId, tuples.length, attributes.length);
    result.unchanged = tuples.length + attributes.length - result.written - result.conflicts.length;
    if (opts.dryRun || result.written === 0) {
      await client.query("ROLLBACK");
      return result;
    }
    await client.query("COMMIT");
    result.snap = snap;
    return result;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {});
    throw e;
  }
}
