/** SQL pieces shared by reads and writes: visibility at a snap, filters, row mapping. */
import type { Attribute, AttributeFilter, AttributeValue, Tuple, TupleFilter } from "../../model.ts";
import type { Dialect, Fragment } from "./dialect.ts";
import type { Row } from "./executor.ts";

/** The current transaction id inside a write transaction (bumped by its first statement). */
export const CURRENT_TX = "(SELECT value FROM pemba_meta WHERE key = 'tx')";

export const TUPLE_COLUMNS = "entity_type, entity_id, relation, subject_type, subject_id, subject_relation";
export const ATTRIBUTE_COLUMNS = "entity_type, entity_id, attribute, value_type, value";

/**
 * Rows of table alias `t` visible at `snap`. The unary `+` keeps SQLite's planner (no statistics) from picking the
 * created_tx index over the lookup indexes; it changes nothing for PostgreSQL.
 */
export const visibleAt = (t: string, snap: number): Fragment => ({
  sql: `+${t}.created_tx <= ? AND (${t}.deleted_tx IS NULL OR ${t}.deleted_tx > ?)`,
  params: [snap, snap],
});

export function join(parts: Fragment[], separator: string): Fragment {
  return { sql: parts.map((p) => p.sql).join(separator), params: parts.flatMap((p) => p.params) };
}

/** `AND ...` conditions on table alias `t` for a tuple filter (empty = any). */
export function tupleFilterSql(d: Dialect, t: string, f: TupleFilter): Fragment {
  const parts: Fragment[] = [];
  const eq = (col: string, v: string | undefined) => {
    if (v) parts.push({ sql: ` AND ${t}.${col} = ?`, params: [v] });
  };
  const inIds = (col: string, ids: string[] | undefined) => {
    if (ids && ids.length > 0) {
      const f = d.inList(`${t}.${col}`, ids);
      parts.push({ sql: ` AND ${f.sql}`, params: f.params });
    }
  };
  eq("entity_type", f.entity?.type);
  inIds("entity_id", f.entity?.ids);
  eq("relation", f.relation);
  eq("subject_type", f.subject?.type);
  inIds("subject_id", f.subject?.ids);
  eq("subject_relation", f.subject?.relation);
  return join(parts, "");
}

export function attributeFilterSql(d: Dialect, t: string, f: AttributeFilter): Fragment {
  const parts: Fragment[] = [];
  if (f.entity?.type) parts.push({ sql: ` AND ${t}.entity_type = ?`, params: [f.entity.type] });
  for (const [col, list] of [
    ["entity_id", f.entity?.ids],
    ["attribute", f.attributes],
  ] as const) {
    if (list && list.length > 0) {
      const inList = d.inList(`${t}.${col}`, list);
      parts.push({ sql: ` AND ${inList.sql}`, params: inList.params });
    }
  }
  return join(parts, "");
}

export function rowToTuple(r: Row): Tuple {
  return {
    entity: { type: r.entity_type as string, id: r.entity_id as string },
    relation: r.relation as string,
    subject: {
      type: r.subject_type as string,
      id: r.subject_id as string,
      relation: r.subject_relation as string,
    },
  };
}

export function rowToAttribute(r: Row): Attribute {
  return {
    entity: { type: r.entity_type as string, id: r.entity_id as string },
    attribute: r.attribute as string,
    value: { type: r.value_type as AttributeValue["type"], data: JSON.parse(r.value as string) },
  };
}

export const tupleCells = (t: Tuple): string[] => [
  t.entity.type,
  t.entity.id,
  t.relation,
  t.subject.type,
  t.subject.id,
  t.subject.relation,
];
