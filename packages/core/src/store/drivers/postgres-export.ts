/**
 * PostgreSQL's export of a tenant's rows for a dump (LineExports): ONE `COPY (SELECT ...) TO STDOUT` per table, in
 * which the server writes each row as its dump line (the bytes writer.ts's tupleText / attributeText write for the
 * same cells), so Node only passes the COPY stream's bytes on: no row is parsed into cells, no string is built per
 * row. The statement reads at the export's snap through created_tx / deleted_tx like the paged reads (and, like them at
 * time 0, without rows whose expiry is at or before the epoch), with its own MVCC snapshot for the rest: writes go
 * on while it runs.
 *
 * The lines come out of COPY's CSV format with a delimiter and a quote character that no line holds (\x01, \x02:
 * control characters, which JSON text always escapes), so every line is sent as it is, one a row.
 *
 * Strings go through to_json, which escapes as JSON.stringify does (", \, \b \f \n \r \t, other control characters
 * as \u00xx in lower-case hex; PostgreSQL text holds no lone surrogate, the one case JSON.stringify escapes and
 * to_json cannot meet). An expiry is written as Date.prototype.toISOString does for the years 1970-9999; a tenant
 * with an expiry after them (a year of five digits and a sign) is exported by the paged reads instead.
 */
import type pg from "pg";
import { to as copyTo } from "pg-copy-streams";

/** The last millisecond of the year 9999 (toISOString writes later years with a sign and six digits). */
export const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

const json = (column: string) => `to_json(t.${column})::text`;

/** `,"expires_at":"YYYY-MM-DDTHH:MM:SS.mmmZ"`, or nothing when the row never expires; integer arithmetic only. */
const EXPIRES = `CASE WHEN t.expires_at IS NULL THEN '' ELSE ',"expires_at":"' ||
  to_char(to_timestamp(t.expires_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '.' ||
  lpad((t.expires_at % 1000)::text, 3, '0') || 'Z"' END`;

const TUPLE_LINE = `'{"type":"tuple","entity_type":' || ${json("entity_type")} || ',"entity_id":' || ${json("entity_id")} ||
  ',"relation":' || ${json("relation")} || ',"subject_type":' || ${json("subject_type")} || ',"subject_id":' ||
  ${json("subject_id")} || CASE WHEN t.subject_relation = '' THEN '' ELSE ',"subject_relation":' ||
  ${json("subject_relation")} END || ${EXPIRES} || '}'`;

/** The stored value is already the value's JSON text as JSON.stringify wrote it. */
const ATTRIBUTE_LINE = `'{"type":"attribute","entity_type":' || ${json("entity_type")} || ',"entity_id":' ||
  ${json("entity_id")} || ',"attribute":' || ${json("attribute")} || ',"value_type":' || ${json("value_type")} ||
  ',"value":' || t.value || ${EXPIRES} || '}'`;

/** Whether some row of the tenant (any, deleted ones too) expires after the year 9999 (two index probes). */
export const ODD_EXPIRY = `SELECT EXISTS (SELECT 1 FROM tuples WHERE tenant_id = $1 AND expires_at > ${LAST_FOUR_DIGIT_YEAR_MS})
  OR EXISTS (SELECT 1 FROM attributes WHERE tenant_id = $1 AND expires_at > ${LAST_FOUR_DIGIT_YEAR_MS}) AS odd`;

/**
 * The COPY statement of a table's lines at `snap` (COPY takes no parameters: the tenant id goes in as a quoted
 * literal, the snap as an integer). Rows in id order, as the paged reads give them.
 */
export function exportLinesCopy(table: "tuples" | "attributes", tenantLiteral: string, snap: number): string {
  if (!Number.isSafeInteger(snap)) throw new Error(`snap ${snap} is not an integer`);
  const line = table === "tuples" ? TUPLE_LINE : ATTRIBUTE_LINE;
  return `COPY (SELECT ${line} FROM ${table} t WHERE t.tenant_id = ${tenantLiteral} AND t.created_tx <= ${snap}
    AND (t.deleted_tx IS NULL OR t.deleted_tx > ${snap}) AND (t.expires_at IS NULL OR t.expires_at > 0) ORDER BY t.id)
    TO STDOUT (FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02')`;
}

/**
 * The lines of `table` at `snap` on `client` (a connection of its own: the COPY stream holds it to the end), as the
 * COPY stream's chunks. The client is released when the stream ends, and discarded when the caller stops early.
 */
export async function* copyLines(
  client: pg.PoolClient,
  table: "tuples" | "attributes",
  tenantId: string,
  snap: number,
): AsyncGenerator<Uint8Array> {
  let done = false;
  try {
    const stream = client.query(copyTo(exportLinesCopy(table, client.escapeLiteral(tenantId), snap)));
    for await (const chunk of stream as AsyncIterable<Buffer>) yield chunk;
    done = true;
  } finally {
    // a COPY left mid-stream leaves the connection unusable: it is closed rather than returned to the pool
    client.release(done ? undefined : new Error("export stopped before its end"));
  }
}
