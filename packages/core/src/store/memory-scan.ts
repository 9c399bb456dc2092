/** Scans over the memory store's row lists: visibility at a snap, binary searches, paging. */
import type { Attribute, Tuple } from "../model.ts";
import { decodeNumberCursor, encodeCursor } from "./cursor.ts";
import type { AttributeRow, TupleRow, TxEntry } from "./memory-tenant.ts";
import type { Page } from "./store.ts";

/** First index in `rows` (sorted by id) whose id is greater than `after`. */
export function firstAfter(rows: { id: number }[], after: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid].id <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function pushVisible(rows: TupleRow[], snap: number, out: Tuple[]): void {
  for (let k = 0; k < rows.length; k++) {
    const row = rows[k];
    if (row.created <= snap && row.deleted > snap) out.push(row.tuple);
  }
}

export function pushVisibleAttributes(
  byName: Map<string, AttributeRow[]> | undefined,
  names: string[],
  snap: number,
  out: Attribute[],
): void {
  if (!byName) return;
  for (let n = 0; n < names.length; n++) {
    const rows = byName.get(names[n]);
    if (!rows) continue;
    // newest first: at most one row of an attribute is visible at a snap
    for (let k = rows.length - 1; k >= 0; k--) {
      const row = rows[k];
      if (row.created <= snap && row.deleted > snap) {
        out.push(row.attribute);
        break;
      }
    }
  }
}

export function anyVisible(m: Map<string, unknown>, depth: number, snap: number): boolean {
  for (const v of m.values()) {
    if (depth === 1) {
      for (const r of v as { created: number; deleted: number }[]) {
        if (r.created <= snap && r.deleted > snap) return true;
      }
    } else if (anyVisible(v as Map<string, unknown>, depth - 1, snap)) return true;
  }
  return false;
}

export const byRowId = (a: { id: number }, b: { id: number }) => a.id - b.id;

export function firstTxAfter(log: TxEntry[], after: number): number {
  let lo = 0;
  let hi = log.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (log[mid].tx <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function pageRows<R extends { id: number; created: number; deleted: number }, T>(
  rows: R[],
  snap: number,
  cursor: string | undefined,
  limit: number,
  pick: (r: R) => T | undefined,
): Page<T> {
  const items: T[] = [];
  let lastId = 0;
  for (let i = firstAfter(rows, cursor ? decodeNumberCursor(cursor) : 0); i < rows.length; i++) {
    const r = rows[i];
    if (r.created > snap || r.deleted <= snap) continue;
    const item = pick(r);
    if (item === undefined) continue;
    if (items.length === limit) return { items, cursor: encodeCursor(lastId) };
    items.push(item);
    lastId = r.id;
  }
  return { items, cursor: "" };
}
