/**
 * One tenant's data in the memory store: interned strings, columnar tuple and attribute tables (rows carry
 * created/deleted transaction ids, history kept for snapshot reads until gc) and the change log.
 */

import type { DataBundle, SchemaRecord, Tenant } from "../store.ts";
import { AttributeTable } from "./attributes.ts";
import { Interner } from "./columns.ts";
import { TupleTable } from "./tuples.ts";

/**
 * One applied transaction. Its created rows need no list: rows are appended in transaction order, so they are
 * the rows whose `created` is `tx`, a contiguous range. Deleted rows are listed by row id.
 */
export interface TxEntry {
  tx: number;
  /** Date.now() when applied. */
  at: number;
  deletedTuples: number[] | undefined;
  deletedAttributes: number[] | undefined;
}

export class TenantData {
  tenant: Tenant;
  strings = new Interner();
  tuples: TupleTable;
  attributes: AttributeTable;
  schemas: (SchemaRecord & { seq: number })[] = [];
  bundles = new Map<string, DataBundle>();
  txLog: TxEntry[] = [];
  /** The last transaction applied to this tenant (0 = none). */
  lastTx = 0;
  /** A lower bound of the live rows' expiries (+Infinity: none); exact after each sweep. */
  earliestExpiry = Number.POSITIVE_INFINITY;
  /** The horizon of the last collect: rows deleted at or before it are garbage (counted, maybe not yet removed). */
  private collectedTo = 0;
  /** Garbage rows not yet removed. */
  private garbage = 0;

  constructor(tenant: Tenant, hashMask = -1) {
    this.tenant = tenant;
    this.tuples = new TupleTable(hashMask);
    this.attributes = new AttributeTable(hashMask);
  }

  /**
   * Collects up to `horizon` (rising from call to call): drops the change log up to it and returns how many rows
   * were deleted at or before it since the last call. Such rows are invisible at every readable snap; they are
   * physically removed (and strings no row uses any more dropped) once they make up an eighth of the rows, so a
   * frequent gc with little garbage costs one scan rather than a rebuild of every index.
   */
  collect(horizon: number): number {
    let first = 0;
    while (first < this.txLog.length && this.txLog[first].tx <= horizon) first++;
    if (first > 0) this.txLog = this.txLog.slice(first);
    if (horizon <= this.collectedTo) return 0;
    const newly =
      countDeleted(this.tuples, this.collectedTo, horizon) +
      countDeleted(this.attributes, this.collectedTo, horizon);
    this.collectedTo = horizon;
    this.garbage += newly;
    if (this.garbage > 0 && this.garbage * 8 >= this.tuples.n + this.attributes.n) this.compact(horizon);
    return newly;
  }

  /** Removes every row deleted at or before `horizon` and renumbers the strings still used. */
  private compact(horizon: number): void {
    const removedTuples = this.tuples.compact(horizon);
    const removedAttributes = this.attributes.compact(horizon);
    this.garbage = 0;
    const used = new Uint8Array(this.strings.strings.length);
    this.tuples.markStrings(used);
    this.attributes.markStrings(used);
    if (used.indexOf(0, 1) !== -1) {
      const remap = this.strings.rebuild(used);
      this.tuples.remapStrings(remap);
      this.attributes.remapStrings(remap);
      this.tuples.reindex();
      this.attributes.reindex();
    } else {
      if (removedTuples > 0) this.tuples.reindex();
      if (removedAttributes > 0) this.attributes.reindex();
    }
  }
}

/** Rows with from < deleted <= to. */
function countDeleted(table: { n: number; deleted: Int32Array }, from: number, to: number): number {
  const deleted = table.deleted;
  let count = 0;
  for (let r = 0; r < table.n; r++) {
    const d = deleted[r];
    if (d > from && d <= to) count++;
  }
  return count;
}
