/** The read statements: each engine read batch is ONE statement joining the bound query rows to the table. */
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../model.ts";
import type { AttributeQuery, ChangeSet, DataChange, SubjectTupleQuery, TupleQuery } from "../store.ts";
import type { Dialect, Fragment } from "./dialect.ts";
import type { Row, Statement } from "./executor.ts";
import {
  attributeFilterSql,
  join,
  rowToAttribute,
  rowToTuple,
  tupleFilterSql,
  visibleAt,
} from "./fragments.ts";

const TUPLE_SELECT =
  "t.entity_type, t.entity_id, t.relation, t.subject_type, t.subject_id, t.subject_relation";
const ATTRIBUTE_SELECT = "t.entity_type, t.entity_id, t.attribute, t.value_type, t.value";
/** The columns of both tables in one row shape (`is_attribute` tells them apart), for the combined read. */
const NULL_TEXT = "CAST(NULL AS TEXT)";
const TUPLE_AS_READ = `0 AS is_attribute, ${TUPLE_SELECT}, ${NULL_TEXT} AS attribute, ${NULL_TEXT} AS value_type, ${NULL_TEXT} AS value`;
const ATTRIBUTE_AS_READ = `1 AS is_attribute, t.entity_type, t.entity_id, ${NULL_TEXT} AS relation, ${NULL_TEXT} AS subject_type, ${NULL_TEXT} AS subject_id, ${NULL_TEXT} AS subject_relation, t.attribute, t.value_type, t.value`;

export function queryTuplesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  queries: TupleQuery[],
  select = TUPLE_SELECT,
): Statement {
  const keys: string[][] = [];
  for (const q of queries) {
    for (const id of q.entityIds) for (const r of q.relations) keys.push([q.entityType, id, r]);
  }
  const match = d.keyIn(["t.entity_type", "t.entity_id", "t.relation"], keys);
  const vis = visibleAt("t", snap);
  return {
    sql: `SELECT ${select} FROM ${d.table("tuples", "t", "tuples_entity_idx")}
      WHERE t.tenant_id = ? AND ${match.sql} AND ${vis.sql}`,
    params: [tenantId, ...match.params, ...vis.params],
  };
}

export function querySubjectTuplesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  queries: SubjectTupleQuery[],
): Statement {
  const keys: string[][] = [];
  for (const q of queries) {
    for (const id of q.subjectIds) {
      for (const r of q.relations) keys.push([q.subjectType, id, q.subjectRelation, q.entityType, r]);
    }
  }
  const match = d.keyIn(
    ["t.subject_type", "t.subject_id", "t.subject_relation", "t.entity_type", "t.relation"],
    keys,
  );
  const vis = visibleAt("t", snap);
  return {
    sql: `SELECT ${TUPLE_SELECT} FROM ${d.table("tuples", "t", "tuples_subject_idx")}
      WHERE t.tenant_id = ? AND ${match.sql} AND ${vis.sql}`,
    params: [tenantId, ...match.params, ...vis.params],
  };
}

export function queryAttributesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  queries: AttributeQuery[],
  select = ATTRIBUTE_SELECT,
): Statement {
  const byId: string[][] = [];
  const byType: string[][] = [];
  for (const q of queries) {
    for (const a of q.attributes) {
      if (q.entityIds) for (const id of q.entityIds) byId.push([q.entityType, id, a]);
      else byType.push([q.entityType, a]);
    }
  }
  const parts = [];
  const vis = visibleAt("t", snap);
  if (byId.length > 0 || byType.length === 0) {
    const match = d.keyIn(["t.entity_type", "t.entity_id", "t.attribute"], byId);
    parts.push({
      sql: `SELECT ${select} FROM ${d.table("attributes", "t", "attributes_entity_idx")}
        WHERE t.tenant_id = ? AND ${match.sql} AND ${vis.sql}`,
      params: [tenantId, ...match.params, ...vis.params],
    });
  }
  if (byType.length > 0) {
    const match = d.keyIn(["t.entity_type", "t.attribute"], byType);
    parts.push({
      sql: `SELECT ${select} FROM ${d.table("attributes", "t", "attributes_entity_idx")}
        WHERE t.tenant_id = ? AND ${match.sql} AND ${vis.sql}`,
      params: [tenantId, ...match.params, ...vis.params],
    });
  }
  return join(parts, " UNION ALL ");
}

/** queryTuples and queryAttributes of one walk level as ONE statement; rows split by `splitReads`. */
export function queryReadsStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  tuples: TupleQuery[],
  attributes: AttributeQuery[],
): Statement {
  return join(
    [
      queryTuplesStatement(d, tenantId, snap, tuples, TUPLE_AS_READ),
      queryAttributesStatement(d, tenantId, snap, attributes, ATTRIBUTE_AS_READ),
    ],
    " UNION ALL ",
  );
}

export function splitReads(rows: Row[]): [Tuple[], Attribute[]] {
  const tuples: Tuple[] = [];
  const attributes: Attribute[] = [];
  for (const r of rows) {
    if (Number(r.is_attribute) === 1) attributes.push(rowToAttribute(r));
    else tuples.push(rowToTuple(r));
  }
  return [tuples, attributes];
}

export function listObjectIdsStatement(d: Dialect, tenantId: string, snap: number, type: string): Statement {
  const vis = visibleAt("t", snap);
  const part = (table: string, column: string, typeColumn: string, index: string) => ({
    sql: `SELECT t.${column} AS id FROM ${d.table(table, "t", index)} WHERE t.tenant_id = ? AND t.${typeColumn} = ? AND ${vis.sql}`,
    params: [tenantId, type, ...vis.params],
  });
  return join(
    [
      part("tuples", "entity_id", "entity_type", "tuples_entity_idx"),
      part("tuples", "subject_id", "subject_type", "tuples_subject_idx"),
      part("attributes", "entity_id", "entity_type", "attributes_entity_idx"),
    ],
    " UNION ",
  );
}

/**
 * A page of rows visible at `snap` with id > `afterId`, in id order. Written as two ordered, limited halves (rows
 * still live, rows deleted after `snap`) so that each half walks the (tenant_id, deleted_tx) index in id order
 * and only 2 x `limit` rows are ever sorted: `deleted_tx IS NULL OR deleted_tx > ?` in one WHERE makes SQLite
 * sort every remaining row of the tenant for each page (quadratic over a paged full read).
 */
function pagedVisible(
  table: string,
  select: string,
  tenantId: string,
  snap: number,
  where: Fragment,
  afterId: number,
  limit: number,
): Statement {
  const half = (deleted: string, deletedParams: unknown[]) => ({
    sql: `SELECT * FROM (SELECT t.id, ${select} FROM ${table} t
      WHERE t.tenant_id = ? AND ${deleted} AND t.id > ? AND +t.created_tx <= ?${where.sql}
      ORDER BY t.id LIMIT ?) h`,
    params: [tenantId, ...deletedParams, afterId, snap, ...where.params, limit],
  });
  const live = half("t.deleted_tx IS NULL", []);
  const gone = half("t.deleted_tx > ?", [snap]);
  return {
    sql: `SELECT * FROM (${live.sql} UNION ALL ${gone.sql}) u ORDER BY id LIMIT ?`,
    params: [...live.params, ...gone.params, limit],
  };
}

export function readTuplesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  filter: TupleFilter,
  afterId: number,
  limit: number,
): Statement {
  const where = tupleFilterSql(d, "t", filter);
  return pagedVisible("tuples", TUPLE_SELECT, tenantId, snap, where, afterId, limit);
}

export function readAttributesStatement(
  d: Dialect,
  tenantId: string,
  snap: number,
  filter: AttributeFilter,
  afterId: number,
  limit: number,
): Statement {
  const where = attributeFilterSql(d, "t", filter);
  return pagedVisible("attributes", ATTRIBUTE_SELECT, tenantId, snap, where, afterId, limit);
}

/**
 * The ids of the first `limit` transactions after `after` that changed data of the tenant; history at or before
 * the gc horizon is gone, so those transactions are never reported.
 */
export function changedTxStatement(tenantId: string, after: number, limit: number): Statement {
  const horizon = "(SELECT value FROM pemba_meta WHERE key = 'gc_horizon')";
  const part = (table: string, column: string) =>
    `SELECT ${column} AS tx FROM ${table} WHERE tenant_id = ? AND ${column} > ? AND ${column} > ${horizon}`;
  return {
    sql: `SELECT tx FROM (${part("tuples", "created_tx")} UNION ${part("tuples", "deleted_tx")}
      UNION ${part("attributes", "created_tx")} UNION ${part("attributes", "deleted_tx")}) u ORDER BY tx LIMIT ?`,
    params: [tenantId, after, tenantId, after, tenantId, after, tenantId, after, limit],
  };
}

/** Rows created or deleted by transactions in [from, to], with `kind` 't' (tuple) or 'a' (attribute). */
export function changedRowsStatement(tenantId: string, from: number, to: number): Statement {
  const part = (table: string, kind: string, cols: string) =>
    `SELECT '${kind}' AS kind, id, created_tx, deleted_tx, ${cols} FROM ${table}
      WHERE tenant_id = ? AND ((created_tx >= ? AND created_tx <= ?) OR (deleted_tx >= ? AND deleted_tx <= ?))`;
  const tupleCols =
    "entity_type, entity_id, relation, subject_type, subject_id, subject_relation, NULL AS attribute, NULL AS value_type, NULL AS value";
  const attrCols =
    "entity_type, entity_id, NULL AS relation, NULL AS subject_type, NULL AS subject_id, NULL AS subject_relation, attribute, value_type, value";
  return {
    sql: `${part("tuples", "t", tupleCols)} UNION ALL ${part("attributes", "a", attrCols)} ORDER BY id`,
    params: [tenantId, from, to, from, to, tenantId, from, to, from, to],
  };
}

/** Groups changed rows into change sets: per transaction, tuple deletes, attribute deletes, then creates. */
export function buildChangeSets(txs: number[], rows: Row[]): ChangeSet[] {
  const sets = new Map<
    number,
    { del: DataChange[]; delA: DataChange[]; add: DataChange[]; addA: DataChange[] }
  >();
  for (const tx of txs) sets.set(tx, { del: [], delA: [], add: [], addA: [] });
  for (const r of rows) {
    const isTuple = r.kind === "t";
    const deleted = r.deleted_tx == null ? undefined : sets.get(Number(r.deleted_tx));
    const created = sets.get(Number(r.created_tx));
    if (deleted) {
      if (isTuple) deleted.del.push({ operation: "OPERATION_DELETE", tuple: rowToTuple(r) });
      else deleted.delA.push({ operation: "OPERATION_DELETE", attribute: rowToAttribute(r) });
    }
    if (created) {
      if (isTuple) created.add.push({ operation: "OPERATION_CREATE", tuple: rowToTuple(r) });
      else created.addA.push({ operation: "OPERATION_CREATE", attribute: rowToAttribute(r) });
    }
  }
  return txs.map((tx) => {
    const s = sets.get(tx) as {
      del: DataChange[];
      delA: DataChange[];
      add: DataChange[];
      addA: DataChange[];
    };
    return { snap: tx, changes: [...s.del, ...s.delA, ...s.add, ...s.addA] };
  });
}
