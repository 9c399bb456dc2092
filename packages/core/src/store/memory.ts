/**
 * The in-memory store: the fastest driver (tests, benchmarks, `memory:` URLs). Engine reads answer synchronously
 * from nested-map indexes; history is kept per row so reads at an old snap are exact.
 */
import { PembaError } from "../errors.ts";
import {
  type Attribute,
  type AttributeFilter,
  attributeKey,
  type Tuple,
  type TupleFilter,
  tupleKey,
} from "../model.ts";
import { decodeNumberCursor, decodeStringCursor, encodeCursor } from "./cursor.ts";
import { attributeMatches, tupleMatches } from "./filters.ts";
import {
  anyVisible,
  byRowId,
  firstTxAfter,
  pageRows,
  pushVisible,
  pushVisibleAttributes,
} from "./memory-scan.ts";
import { type AttributeRow, LIVE, TenantData, type TupleRow, type TxEntry } from "./memory-tenant.ts";
import type {
  AttributeQuery,
  ChangeSet,
  DataBundle,
  DataChange,
  Page,
  SchemaRecord,
  Snap,
  Store,
  SubjectTupleQuery,
  Tenant,
  TupleQuery,
  WriteRequest,
} from "./store.ts";
import { validateWriteRequest } from "./validate.ts";

const NO_TUPLES: Tuple[] = [];

export const DEFAULT_TENANT: Readonly<{ id: string; name: string }> = { id: "t1", name: "example tenant" };

function pageLimit(pageSize: number): number {
  return pageSize > 0 ? pageSize : Number.POSITIVE_INFINITY;
}

export class MemoryStore implements Store {
  readonly kind = "memory" as const;
  private tenants = new Map<string, TenantData>();
  private head = 0;
  private horizon = 0;
  private rowSeq = 0;
  private schemaSeq = 0;

  constructor() {
    this.tenants.set(DEFAULT_TENANT.id, new TenantData({ ...DEFAULT_TENANT, createdAt: new Date() }));
  }

  private data(tenantId: string): TenantData {
    const d = this.tenants.get(tenantId);
    if (!d) throw new PembaError("ERROR_CODE_TENANT_NOT_FOUND");
    return d;
  }

  // tenants

  async createTenant(id: string, name: string): Promise<Tenant> {
    if (!id) throw new PembaError("ERROR_CODE_VALIDATION", "invalid tenant id");
    if (this.tenants.has(id)) throw new PembaError("ERROR_CODE_ALREADY_EXIST");
    const tenant = { id, name, createdAt: new Date() };
    this.tenants.set(id, new TenantData(tenant));
    return { ...tenant };
  }

  async getTenant(id: string): Promise<Tenant | undefined> {
    const d = this.tenants.get(id);
    return d ? { ...d.tenant } : undefined;
  }

  async deleteTenant(id: string): Promise<Tenant | undefined> {
    const d = this.tenants.get(id);
    if (!d) return undefined;
    this.tenants.delete(id);
    return { ...d.tenant };
  }

  async listTenants(pageSize: number, cursor?: string): Promise<Page<Tenant>> {
    const after = cursor ? decodeStringCursor(cursor) : undefined;
    const ids = [...this.tenants.keys()].filter((id) => after === undefined || id > after).sort();
    const limit = pageLimit(pageSize);
    const page = ids.slice(0, limit);
    const items = page.map((id) => ({ ...(this.tenants.get(id) as TenantData).tenant }));
    return { items, cursor: ids.length > page.length ? encodeCursor(page[page.length - 1]) : "" };
  }

  // schemas

  async writeSchema(tenantId: string, version: string, schema: string): Promise<void> {
    const d = this.data(tenantId);
    d.schemas = d.schemas.filter((s) => s.version !== version);
    d.schemas.push({ version, schema, createdAt: new Date(), seq: ++this.schemaSeq });
  }

  async readSchema(tenantId: string, version: string): Promise<SchemaRecord | undefined> {
    const s = this.tenants.get(tenantId)?.schemas.find((r) => r.version === version);
    return s ? { version: s.version, schema: s.schema, createdAt: s.createdAt } : undefined;
  }

  async headSchema(tenantId: string): Promise<SchemaRecord | undefined> {
    const list = this.tenants.get(tenantId)?.schemas ?? [];
    const s = list[list.length - 1];
    return s ? { version: s.version, schema: s.schema, createdAt: s.createdAt } : undefined;
  }

  async listSchemas(tenantId: string, pageSize: number, cursor?: string): Promise<Page<SchemaRecord>> {
    const before = cursor ? decodeNumberCursor(cursor) : Number.POSITIVE_INFINITY;
    const rows = (this.tenants.get(tenantId)?.schemas ?? []).filter((s) => s.seq < before).reverse();
    const page = rows.slice(0, pageLimit(pageSize));
    return {
      items: page.map((s) => ({ version: s.version, schema: s.schema, createdAt: s.createdAt })),
      cursor: rows.length > page.length ? encodeCursor(page[page.length - 1].seq) : "",
    };
  }

  // writes

  async write(tenantId: string, req: WriteRequest): Promise<Snap> {
    validateWriteRequest(req);
    const tx = ++this.head;
    this.applyWrite(this.data(tenantId), tx, req);
    return tx;
  }

  /**
   * Replica use (a memory copy of another store, fed by that store's change feed): applies one change set at
   * exactly `set.snap`. Change sets of one tenant must come in increasing snap order; tenants are created on
   * demand. Deletes apply before creates (an attribute update is a delete and a create in one set).
   */
  applyChangeSet(tenantId: string, set: ChangeSet): void {
    let d = this.tenants.get(tenantId);
    if (!d) {
      d = new TenantData({ id: tenantId, name: tenantId, createdAt: new Date() });
      this.tenants.set(tenantId, d);
    }
    const last = d.txLog[d.txLog.length - 1];
    if (last && last.tx >= set.snap)
      throw new Error(`change set ${set.snap} is not after the tenant's last applied snap ${last.tx}`);
    const req: Required<Pick<WriteRequest, "tuples" | "attributes" | "deleteTuples" | "deleteAttributes">> = {
      tuples: [],
      attributes: [],
      deleteTuples: [],
      deleteAttributes: [],
    };
    for (const c of set.changes) {
      if (c.operation === "OPERATION_CREATE") {
        if (c.tuple) req.tuples.push(c.tuple);
        if (c.attribute) req.attributes.push(c.attribute);
      } else {
        if (c.tuple) req.deleteTuples.push(c.tuple);
        if (c.attribute)
          req.deleteAttributes.push({ entity: c.attribute.entity, attribute: c.attribute.attribute });
      }
    }
    this.applyWrite(d, set.snap, req);
    if (set.snap > this.head) this.head = set.snap;
  }

  private applyWrite(d: TenantData, tx: number, req: WriteRequest): void {
    const entry: TxEntry = {
      tx,
      createdAt: new Date(),
      createdTuples: [],
      deletedTuples: [],
      createdAttributes: [],
      deletedAttributes: [],
    };
    const deleteTupleRow = (key: string, row: TupleRow) => {
      row.deleted = tx;
      d.liveTuples.delete(key);
      entry.deletedTuples.push(row);
    };
    const deleteAttributeRow = (row: AttributeRow) => {
      row.deleted = tx;
      entry.deletedAttributes.push(row);
    };
    for (const t of req.deleteTuples ?? []) {
      const key = tupleKey(t);
      const row = d.liveTuples.get(key);
      if (row) deleteTupleRow(key, row);
    }
    for (const f of req.deleteTupleFilters ?? []) {
      for (const [key, row] of d.liveTuples) if (tupleMatches(f, row.tuple)) deleteTupleRow(key, row);
    }
    for (const a of req.deleteAttributes ?? []) {
      const row = d.liveAttribute(a.entity.type, a.entity.id, a.attribute);
      if (row) deleteAttributeRow(row);
    }
    for (const f of req.deleteAttributeFilters ?? []) {
      for (const row of d.attributeRows) {
        if (row.deleted === LIVE && attributeMatches(f, row.attribute)) deleteAttributeRow(row);
      }
    }
    for (const t of req.tuples ?? []) {
      const key = tupleKey(t);
      if (d.liveTuples.has(key)) continue;
      const tuple: Tuple = Object.freeze({
        entity: Object.freeze({ type: t.entity.type, id: t.entity.id }),
        relation: t.relation,
        subject: Object.freeze({ type: t.subject.type, id: t.subject.id, relation: t.subject.relation }),
      });
      const row: TupleRow = { id: ++this.rowSeq, tuple, created: tx, deleted: LIVE };
      d.addTuple(row, key);
      entry.createdTuples.push(row);
    }
    // the last value written for an attribute wins
    const upserts = new Map<string, Attribute>();
    for (const a of req.attributes ?? []) {
      upserts.delete(attributeKey(a));
      upserts.set(attributeKey(a), a);
    }
    for (const a of upserts.values()) {
      const old = d.liveAttribute(a.entity.type, a.entity.id, a.attribute);
      if (old) deleteAttributeRow(old);
      const attribute: Attribute = Object.freeze({
        entity: Object.freeze({ type: a.entity.type, id: a.entity.id }),
        attribute: a.attribute,
        value: Object.freeze({
          type: a.value.type,
          data: Array.isArray(a.value.data) ? Object.freeze([...a.value.data]) : a.value.data,
        }) as Attribute["value"],
      });
      const row: AttributeRow = { id: ++this.rowSeq, attribute, created: tx, deleted: LIVE };
      d.addAttribute(row);
      entry.createdAttributes.push(row);
    }
    d.txLog.push(entry);
  }

  headSnap(_tenantId: string): Snap {
    return this.head;
  }

  assertSnapReadable(_tenantId: string, snap: Snap): void {
    if (snap < this.horizon) throw new PembaError("ERROR_CODE_SNAP_TOKEN_EXPIRED");
  }

  // engine reads

  queryTuples(tenantId: string, snap: Snap, queries: TupleQuery[]): Tuple[] {
    if (snap >= LIVE) snap = LIVE - 1;
    const byType = this.tenants.get(tenantId)?.byEntity;
    if (!byType) return NO_TUPLES;
    const out: Tuple[] = [];
    for (let qi = 0; qi < queries.length; qi++) {
      const q = queries[qi];
      const byId = byType.get(q.entityType);
      if (!byId) continue;
      for (let i = 0; i < q.entityIds.length; i++) {
        const byRelation = byId.get(q.entityIds[i]);
        if (!byRelation) continue;
        for (let r = 0; r < q.relations.length; r++) {
          const rows = byRelation.get(q.relations[r]);
          if (rows) pushVisible(rows, snap, out);
        }
      }
    }
    return out;
  }

  querySubjectTuples(tenantId: string, snap: Snap, queries: SubjectTupleQuery[]): Tuple[] {
    if (snap >= LIVE) snap = LIVE - 1;
    const byType = this.tenants.get(tenantId)?.bySubject;
    if (!byType) return NO_TUPLES;
    const out: Tuple[] = [];
    for (let qi = 0; qi < queries.length; qi++) {
      const q = queries[qi];
      const byId = byType.get(q.subjectType);
      if (!byId) continue;
      for (let i = 0; i < q.subjectIds.length; i++) {
        const byEntityType = byId.get(q.subjectIds[i])?.get(q.subjectRelation)?.get(q.entityType);
        if (!byEntityType) continue;
        for (let r = 0; r < q.relations.length; r++) {
          const rows = byEntityType.get(q.relations[r]);
          if (rows) pushVisible(rows, snap, out);
        }
      }
    }
    return out;
  }

  queryAttributes(tenantId: string, snap: Snap, queries: AttributeQuery[]): Attribute[] {
    if (snap >= LIVE) snap = LIVE - 1;
    const out: Attribute[] = [];
    const byType = this.tenants.get(tenantId)?.attributes;
    if (!byType) return out;
    for (let qi = 0; qi < queries.length; qi++) {
      const q = queries[qi];
      const byId = byType.get(q.entityType);
      if (!byId) continue;
      if (q.entityIds) {
        for (let i = 0; i < q.entityIds.length; i++)
          pushVisibleAttributes(byId.get(q.entityIds[i]), q.attributes, snap, out);
      } else {
        for (const byName of byId.values()) pushVisibleAttributes(byName, q.attributes, snap, out);
      }
    }
    return out;
  }

  listObjectIds(tenantId: string, snap: Snap, type: string): string[] {
    if (snap >= LIVE) snap = LIVE - 1;
    const d = this.tenants.get(tenantId);
    if (!d) return [];
    const ids = new Set<string>();
    for (const [id, byRelation] of d.byEntity.get(type) ?? []) {
      if (anyVisible(byRelation, 1, snap)) ids.add(id);
    }
    for (const [id, bySubjectRel] of d.bySubject.get(type) ?? []) {
      if (!ids.has(id) && anyVisible(bySubjectRel, 3, snap)) ids.add(id);
    }
    for (const [id, byName] of d.attributes.get(type) ?? []) {
      if (!ids.has(id) && anyVisible(byName, 1, snap)) ids.add(id);
    }
    return [...ids].sort();
  }

  // filtered, paged reads

  async readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Tuple>> {
    const rows = this.tenants.get(tenantId)?.tupleRows ?? [];
    return pageRows(rows, Math.min(snap, LIVE - 1), cursor, pageLimit(pageSize), (r) =>
      tupleMatches(filter, r.tuple) ? r.tuple : undefined,
    );
  }

  async readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Attribute>> {
    const rows = this.tenants.get(tenantId)?.attributeRows ?? [];
    return pageRows(rows, Math.min(snap, LIVE - 1), cursor, pageLimit(pageSize), (r) =>
      attributeMatches(filter, r.attribute) ? r.attribute : undefined,
    );
  }

  async changes(tenantId: string, after: Snap, limit: number): Promise<ChangeSet[]> {
    const log = this.tenants.get(tenantId)?.txLog ?? [];
    const out: ChangeSet[] = [];
    for (let i = firstTxAfter(log, after); i < log.length && out.length < limit; i++) {
      const e = log[i];
      const changes: DataChange[] = [];
      // row order, as the SQL drivers report them
      e.deletedTuples.sort(byRowId);
      e.deletedAttributes.sort(byRowId);
      for (const r of e.deletedTuples) changes.push({ operation: "OPERATION_DELETE", tuple: r.tuple });
      for (const r of e.deletedAttributes)
        changes.push({ operation: "OPERATION_DELETE", attribute: r.attribute });
      for (const r of e.createdTuples) changes.push({ operation: "OPERATION_CREATE", tuple: r.tuple });
      for (const r of e.createdAttributes)
        changes.push({ operation: "OPERATION_CREATE", attribute: r.attribute });
      if (changes.length > 0) out.push({ snap: e.tx, changes });
    }
    return out;
  }

  // bundles

  async writeBundles(tenantId: string, bundles: DataBundle[]): Promise<void> {
    const d = this.data(tenantId);
    for (const b of bundles) d.bundles.set(b.name, structuredClone(b));
  }

  async readBundle(tenantId: string, name: string): Promise<DataBundle | undefined> {
    const b = this.tenants.get(tenantId)?.bundles.get(name);
    return b ? structuredClone(b) : undefined;
  }

  async deleteBundle(tenantId: string, name: string): Promise<boolean> {
    return this.tenants.get(tenantId)?.bundles.delete(name) ?? false;
  }

  async gc(olderThan: Date): Promise<number> {
    let horizon = this.horizon;
    for (const d of this.tenants.values()) {
      for (const e of d.txLog) if (e.createdAt < olderThan && e.tx > horizon) horizon = e.tx;
    }
    this.horizon = horizon;
    let removed = 0;
    for (const d of this.tenants.values()) removed += d.collect(horizon);
    return removed;
  }

  async close(): Promise<void> {}
}
