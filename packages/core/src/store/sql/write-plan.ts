/**
 * A write request as the list of statements of its one transaction. The first statement takes the next
 * transaction id; every later statement refers to it through CURRENT_TX, so the plan needs no round trip between
 * statements. Order: exact deletes, filter deletes, tuple inserts (idempotent), attribute upserts.
 */
import { type Attribute, attributeKey, tupleKey } from "../../model.ts";
import type { WriteRequest } from "../store.ts";
import type { Dialect } from "./dialect.ts";
import type { Statement } from "./executor.ts";
import { attributeFilterSql, CURRENT_TX, TUPLE_COLUMNS, tupleCells, tupleFilterSql } from "./fragments.ts";

export const NEXT_TX = "UPDATE pemba_meta SET value = value + 1 WHERE key = 'tx' RETURNING value";

export function planWrite(d: Dialect, tenantId: string, req: WriteRequest, now: number): Statement[] {
  const out: Statement[] = [
    { sql: NEXT_TX, params: [] },
    {
      sql: `INSERT INTO transactions (id, tenant_id, created_at) VALUES (${CURRENT_TX}, ?, ?)`,
      params: [tenantId, now],
    },
  ];
  const markTuples = `UPDATE tuples SET deleted_tx = ${CURRENT_TX} WHERE tenant_id = ? AND deleted_tx IS NULL`;
  const markAttributes = `UPDATE attributes SET deleted_tx = ${CURRENT_TX} WHERE tenant_id = ? AND deleted_tx IS NULL`;

  if (req.deleteTuples?.length) {
    const rows = d.rows(6, req.deleteTuples.map(tupleCells));
    out.push({
      sql: `${markTuples} AND (${TUPLE_COLUMNS}) IN (SELECT c0, c1, c2, c3, c4, c5 FROM ${rows.sql} r)`,
      params: [tenantId, ...rows.params],
    });
  }
  for (const f of req.deleteTupleFilters ?? []) {
    const where = tupleFilterSql(d, "tuples", f);
    out.push({ sql: markTuples + where.sql, params: [tenantId, ...where.params] });
  }
  if (req.deleteAttributes?.length) {
    const rows = d.rows(
      3,
      req.deleteAttributes.map((a) => [a.entity.type, a.entity.id, a.attribute]),
    );
    out.push({
      sql: `${markAttributes} AND (entity_type, entity_id, attribute) IN (SELECT c0, c1, c2 FROM ${rows.sql} r)`,
      params: [tenantId, ...rows.params],
    });
  }
  for (const f of req.deleteAttributeFilters ?? []) {
    const where = attributeFilterSql(d, "attributes", f);
    out.push({ sql: markAttributes + where.sql, params: [tenantId, ...where.params] });
  }
  if (req.tuples?.length) {
    const unique = [...new Map(req.tuples.map((t) => [tupleKey(t), t])).values()];
    const rows = d.rows(6, unique.map(tupleCells));
    out.push({
      sql: `INSERT INTO tuples (tenant_id, ${TUPLE_COLUMNS}, created_tx)
        SELECT ?, c0, c1, c2, c3, c4, c5, ${CURRENT_TX} FROM ${rows.sql} r WHERE true ON CONFLICT DO NOTHING`,
      params: [tenantId, ...rows.params],
    });
  }
  if (req.attributes?.length) {
    // the last value written for an attribute wins
    const latest = new Map<string, Attribute>();
    for (const a of req.attributes) {
      latest.delete(attributeKey(a));
      latest.set(attributeKey(a), a);
    }
    const cells = [...latest.values()].map((a) => [
      a.entity.type,
      a.entity.id,
      a.attribute,
      a.value.type,
      JSON.stringify(a.value.data),
    ]);
    const keys = d.rows(3, cells);
    out.push({
      sql: `${markAttributes} AND (entity_type, entity_id, attribute) IN (SELECT c0, c1, c2 FROM ${keys.sql} r)`,
      params: [tenantId, ...keys.params],
    });
    const rows = d.rows(5, cells);
    out.push({
      sql: `INSERT INTO attributes (tenant_id, entity_type, entity_id, attribute, value_type, value, created_tx)
        SELECT ?, c0, c1, c2, c3, c4, ${CURRENT_TX} FROM ${rows.sql} r WHERE true`,
      params: [tenantId, ...rows.params],
    });
  }
  return out;
}
