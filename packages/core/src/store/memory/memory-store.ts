/**
 * The in-memory store: the fastest driver (tests, benchmarks, `memory:` URLs, the server's replica of a SQL
 * store). Per tenant, strings are interned and rows live in typed-array columns indexed by hash tables threaded
 * through the rows (tuples.ts, attributes.ts), about 100 bytes per row; engine reads answer
 * synchronously and build their result objects on demand. History is kept per row so reads at an old snap are
 * exact.
 */
import { PembaError } from "../../errors.ts";
import {
  type Attribute,
  type AttributeFilter,
  attributeKey,
  type Tuple,
  type TupleFilter,
} from "../../model.ts";
import type { ChangeSetSink, Freshness, FreshnessSource } from "../capabilities.ts";
import { decodeNumberCursor, decodeStringCursor, encodeCursor } from "../cursor.ts";
import type {
  AttributeQuery,
  ChangeSet,
  DataBundle,
  DataChange,
  HeadSchemaRecord,
  Page,
  SchemaRecord,
  Snap,
  Store,
  SubjectTupleQuery,
  Tenant,
  TupleQuery,
  WriteRequest,
} from "../store.ts";
import { validateWriteRequest } from "../validate.ts";
import { frozenValue } from "./attributes.ts";
import { expiresOf, LIVE, lowerBound, NEVER, NONE } from "./columns.ts";
import {
  attributeRowMatches,
  makeAttribute,
  makeTuple,
  numberAttributeFilter,
  numberTupleFilter,
  pageRows,
  tupleRowMatches,
} from "./scan.ts";
import { TenantData, type TxEntry } from "./tenant.ts";

export const DEFAULT_TENANT: Readonly<{ id: string; name: string }> = { id: "t1", name: "example tenant" };

function pageLimit(pageSize: number): number {
  return pageSize > 0 ? pageSize : Number.POSITIVE_INFINITY;
}

export interface MemoryStoreOptions {
  /** Tests only: ANDed into every index hash (0 makes every key collide, exercising the probe paths). */
  hashMask?: number;
}

/** A page with no items (an invalid cursor still fails). */
function emptyPage<T>(cursor: string | undefined): Page<T> {
  if (cursor) decodeNumberCursor(cursor);
  return { items: [], cursor: "" };
}

/** Index of the first entry of `log` (ascending tx) with tx > `after`. */
function firstTxAfter(log: TxEntry[], after: number): number {
  let lo = 0;
  let hi = log.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (log[mid].tx <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const ascending = (a: number, b: number) => a - b;

export class MemoryStore implements Store, ChangeSetSink, FreshnessSource {
  readonly kind = "memory" as const;
  private tenants = new Map<string, TenantData>();
  private head = 0;
  private horizon = 0;
  private schemaSeq = 0;
  private readonly hashMask: number;

  constructor(options: MemoryStoreOptions = {}) {
    this.hashMask = options.hashMask ?? -1;
    this.tenants.set(DEFAULT_TENANT.id, this.newTenant({ ...DEFAULT_TENANT, createdAt: new Date() }));
  }

  private newTenant(tenant: Tenant): TenantData {
    return new TenantData(tenant, this.hashMask);
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
    this.tenants.set(id, this.newTenant(tenant));
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

  async headSchema(tenantId: string): Promise<HeadSchemaRecord | undefined> {
    const list = this.tenants.get(tenantId)?.schemas ?? [];
    const s = list[list.length - 1];
    return s
      ? { version: s.version, schema: s.schema, createdAt: s.createdAt, readAt: this.head }
      : undefined;
  }

  /** The GC horizon: snaps below it are expired. */
  gcHorizon(): Snap {
    return this.horizon;
  }

  /** The head, the GC horizon, the tenant's created_at and its head schema version, as one look. */
  freshness(tenantId: string): Freshness {
    const d = this.tenants.get(tenantId);
    const schemas = d?.schemas ?? [];
    return {
      head: this.head,
      horizon: this.horizon,
      tenantCreatedAt: d?.tenant.createdAt.getTime(),
      headSchemaVersion: schemas[schemas.length - 1]?.version,
    };
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
    const d = this.data(tenantId);
    const tx = ++this.head;
    this.applyWrite(d, tx, req);
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
      d = this.newTenant({ id: tenantId, name: tenantId, createdAt: new Date() });
      this.tenants.set(tenantId, d);
    }
    if (d.lastTx > 0 && d.lastTx >= set.snap)
      throw new Error(`change set ${set.snap} is not after the tenant's last applied snap ${d.lastTx}`);
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
        if (c.attribute) req.deleteAttributes.push(c.attribute);
      }
    }
    this.applyWrite(d, set.snap, req);
    if (set.snap > this.head) this.head = set.snap;
  }

  private applyWrite(d: TenantData, tx: number, req: WriteRequest): void {
    const strings = d.strings;
    const T = d.tuples;
    const A = d.attributes;
    const deletedTuples: number[] = [];
    const deletedAttributes: number[] = [];
    const deleteTuple = (r: number) => {
      T.remove(r, tx);
      deletedTuples.push(T.id[r]);
    };
    const deleteAttribute = (r: number) => {
      A.deleted[r] = tx;
      deletedAttributes.push(A.id[r]);
    };
    if (req.expireUpTo !== undefined) {
      // the sweep: expired live rows go; the earliest expiry of the rest is exact again
      const upTo = req.expireUpTo;
      let earliest = Number.POSITIVE_INFINITY;
      for (let r = 0; r < T.n; r++) {
        if (T.deleted[r] !== LIVE) continue;
        const e = T.expires[r];
        if (e <= upTo) deleteTuple(r);
        else if (e < earliest) earliest = e;
      }
      for (let r = 0; r < A.n; r++) {
        if (A.deleted[r] !== LIVE) continue;
        const e = A.expires[r];
        if (e <= upTo) deleteAttribute(r);
        else if (e < earliest) earliest = e;
      }
      d.earliestExpiry = earliest;
    }
    for (const t of req.deleteTuples ?? []) {
      const et = strings.lookup(t.entity.type);
      const eid = strings.lookup(t.entity.id);
      const rel = strings.lookup(t.relation);
      const st = strings.lookup(t.subject.type);
      const sid = strings.lookup(t.subject.id);
      const srel = strings.lookup(t.subject.relation);
      if (et === NONE || eid === NONE || rel === NONE || st === NONE || sid === NONE || srel === NONE)
        continue;
      const r = T.findLive(et, eid, rel, st, sid, srel);
      if (r !== NONE) deleteTuple(r);
    }
    for (const f of req.deleteTupleFilters ?? []) {
      const nf = numberTupleFilter(strings, f);
      if (!nf) continue;
      for (let r = 0; r < T.n; r++) if (T.deleted[r] === LIVE && tupleRowMatches(T, r, nf)) deleteTuple(r);
    }
    for (const a of req.deleteAttributes ?? []) {
      const et = strings.lookup(a.entity.type);
      const eid = strings.lookup(a.entity.id);
      const name = strings.lookup(a.attribute);
      if (et === NONE || eid === NONE || name === NONE) continue;
      const r = A.live(et, eid, name);
      if (r !== NONE) deleteAttribute(r);
    }
    for (const f of req.deleteAttributeFilters ?? []) {
      const nf = numberAttributeFilter(strings, f);
      if (!nf) continue;
      for (let r = 0; r < A.n; r++) {
        if (A.deleted[r] === LIVE && attributeRowMatches(A, r, nf)) deleteAttribute(r);
      }
    }
    for (const t of req.tuples ?? []) {
      const et = strings.intern(t.entity.type);
      const eid = strings.intern(t.entity.id);
      const rel = strings.intern(t.relation);
      const st = strings.intern(t.subject.type);
      const sid = strings.intern(t.subject.id);
      const srel = strings.intern(t.subject.relation);
      const expires = expiresOf(t.expiresAt);
      const live = T.findLive(et, eid, rel, st, sid, srel);
      // the same tuple with the same expiry is a no-op; another expiry replaces the row
      if (live !== NONE) {
        if (T.expires[live] === expires) continue;
        deleteTuple(live);
      }
      T.add(et, eid, rel, st, sid, srel, tx, expires);
      if (expires < d.earliestExpiry) d.earliestExpiry = expires;
    }
    // the last value written for an attribute wins (and takes the place of its last write)
    let attributes = req.attributes ?? [];
    if (attributes.length > 1) {
      const last = new Map<string, number>();
      for (let i = 0; i < attributes.length; i++) last.set(attributeKey(attributes[i]), i);
      if (last.size < attributes.length)
        attributes = attributes.filter((a, i) => last.get(attributeKey(a)) === i);
    }
    for (const a of attributes) {
      const et = strings.intern(a.entity.type);
      const eid = strings.intern(a.entity.id);
      const name = strings.intern(a.attribute);
      const old = A.live(et, eid, name);
      if (old !== NONE) deleteAttribute(old);
      const expires = expiresOf(a.expiresAt);
      A.add(et, eid, name, frozenValue(a.value), tx, expires);
      if (expires < d.earliestExpiry) d.earliestExpiry = expires;
    }
    // row ids ascending: the change feed lists deletes in row order, as the SQL drivers do
    deletedTuples.sort(ascending);
    deletedAttributes.sort(ascending);
    d.txLog.push({
      tx,
      at: Date.now(),
      deletedTuples: deletedTuples.length > 0 ? deletedTuples : undefined,
      deletedAttributes: deletedAttributes.length > 0 ? deletedAttributes : undefined,
    });
    d.lastTx = tx;
  }

  headSnap(_tenantId: string): Snap {
    return this.head;
  }

  nextExpiry(tenantId: string): number | undefined {
    const earliest = this.tenants.get(tenantId)?.earliestExpiry;
    return earliest === undefined || earliest === Number.POSITIVE_INFINITY ? undefined : earliest;
  }

  assertSnapReadable(_tenantId: string, snap: Snap): void {
    if (snap < this.horizon) throw new PembaError("ERROR_CODE_SNAP_TOKEN_EXPIRED");
  }

  // engine reads

  queryTuples(tenantId: string, snap: Snap, queries: TupleQuery[], at: number = Date.now()): Tuple[] {
    if (snap >= LIVE) snap = LIVE - 1;
    const d = this.tenants.get(tenantId);
    if (!d) return [];
    const strings = d.strings;
    const s = strings.strings;
    const T = d.tuples;
    const { created, deleted, expires, nextE } = T;
    const out: Tuple[] = [];
    for (let qi = 0; qi < queries.length; qi++) {
      const q = queries[qi];
      const et = strings.lookupName(q.entityType);
      if (et === NONE) continue;
      for (let i = 0; i < q.entityIds.length; i++) {
        const eid = strings.lookup(q.entityIds[i]);
        if (eid === NONE) continue;
        for (let k = 0; k < q.relations.length; k++) {
          const rel = strings.lookupName(q.relations[k]);
          if (rel === NONE) continue;
          const tail = T.entityTail(et, eid, rel);
          if (tail === NONE) continue;
          // one entity object for every tuple of the chain
          let entity: Tuple["entity"] | undefined;
          let visible = 0;
          let last = NONE;
          let r = tail;
          do {
            r = nextE[r];
            if (created[r] <= snap && deleted[r] > snap && expires[r] > at) {
              entity ??= { type: s[et], id: s[eid] };
              const t: Tuple = {
                entity,
                relation: s[rel],
                subject: { type: s[T.st[r]], id: s[T.sid[r]], relation: s[T.srel[r]] },
              };
              if (expires[r] !== NEVER) t.expiresAt = expires[r];
              out.push(t);
              visible++;
              last = r;
            }
          } while (r !== tail);
          // a single subject (an owner, a parent) is what the walk reads next
          if (visible === 1) strings.remember(s[T.sid[last]], T.sid[last]);
        }
      }
    }
    return out;
  }

  querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at: number = Date.now(),
  ): Tuple[] {
    if (snap >= LIVE) snap = LIVE - 1;
    const d = this.tenants.get(tenantId);
    if (!d) return [];
    const strings = d.strings;
    const s = strings.strings;
    const T = d.tuples;
    const { created, deleted, expires, nextS } = T;
    const out: Tuple[] = [];
    for (let qi = 0; qi < queries.length; qi++) {
      const q = queries[qi];
      const et = strings.lookupName(q.entityType);
      const st = strings.lookupName(q.subjectType);
      const srel = strings.lookupName(q.subjectRelation);
      if (et === NONE || st === NONE || srel === NONE) continue;
      for (let i = 0; i < q.subjectIds.length; i++) {
        const sid = strings.lookup(q.subjectIds[i]);
        if (sid === NONE) continue;
        let subject: Tuple["subject"] | undefined;
        for (let k = 0; k < q.relations.length; k++) {
          const rel = strings.lookupName(q.relations[k]);
          if (rel === NONE) continue;
          const tail = T.subjectTail(st, sid, srel, et, rel);
          if (tail === NONE) continue;
          let r = tail;
          do {
            r = nextS[r];
            if (created[r] <= snap && deleted[r] > snap && expires[r] > at) {
              subject ??= { type: s[st], id: s[sid], relation: s[srel] };
              const t: Tuple = { entity: { type: s[et], id: s[T.eid[r]] }, relation: s[rel], subject };
              if (expires[r] !== NEVER) t.expiresAt = expires[r];
              out.push(t);
            }
          } while (r !== tail);
        }
      }
    }
    return out;
  }

  queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at: number = Date.now(),
  ): Attribute[] {
    if (snap >= LIVE) snap = LIVE - 1;
    const out: Attribute[] = [];
    const d = this.tenants.get(tenantId);
    if (!d) return out;
    const strings = d.strings;
    const s = strings.strings;
    const A = d.attributes;
    const { created, deleted, expires, nextA, nextT, values } = A;
    for (let qi = 0; qi < queries.length; qi++) {
      const q = queries[qi];
      const et = strings.lookupName(q.entityType);
      if (et === NONE) continue;
      if (q.entityIds) {
        for (let i = 0; i < q.entityIds.length; i++) {
          const eid = strings.lookup(q.entityIds[i]);
          if (eid === NONE) continue;
          let entity: Attribute["entity"] | undefined;
          for (let k = 0; k < q.attributes.length; k++) {
            const name = strings.lookupName(q.attributes[k]);
            if (name === NONE) continue;
            // newest first: at most one row of an attribute is visible at a snap
            for (let r = A.newest(et, eid, name); r !== NONE; r = nextA[r]) {
              if (created[r] <= snap && deleted[r] > snap) {
                if (expires[r] > at) {
                  entity ??= { type: s[et], id: s[eid] };
                  const a: Attribute = { entity, attribute: s[name], value: values[r] };
                  if (expires[r] !== NEVER) a.expiresAt = expires[r];
                  out.push(a);
                }
                break;
              }
            }
          }
        }
      } else {
        for (let k = 0; k < q.attributes.length; k++) {
          const name = strings.lookupName(q.attributes[k]);
          if (name === NONE) continue;
          const tail = A.typeTail(et, name);
          if (tail === NONE) continue;
          let r = tail;
          do {
            r = nextT[r];
            if (created[r] <= snap && deleted[r] > snap && expires[r] > at) out.push(makeAttribute(A, s, r));
          } while (r !== tail);
        }
      }
    }
    return out;
  }

  listObjectIds(tenantId: string, snap: Snap, type: string, at: number = Date.now()): string[] {
    if (snap >= LIVE) snap = LIVE - 1;
    const d = this.tenants.get(tenantId);
    if (!d) return [];
    const t = d.strings.lookup(type);
    if (t === NONE) return [];
    const seen = new Uint8Array(d.strings.strings.length);
    const T = d.tuples;
    for (let r = 0; r < T.n; r++) {
      if (T.created[r] > snap || T.deleted[r] <= snap || T.expires[r] <= at) continue;
      if (T.et[r] === t) seen[T.eid[r]] = 1;
      if (T.st[r] === t) seen[T.sid[r]] = 1;
    }
    const A = d.attributes;
    for (let r = 0; r < A.n; r++) {
      if (A.et[r] === t && A.created[r] <= snap && A.deleted[r] > snap && A.expires[r] > at)
        seen[A.eid[r]] = 1;
    }
    const ids: string[] = [];
    const s = d.strings.strings;
    for (let i = 0; i < seen.length; i++) if (seen[i] === 1) ids.push(s[i]);
    return ids.sort();
  }

  // filtered, paged reads

  async readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
    at: number = Date.now(),
  ): Promise<Page<Tuple>> {
    const d = this.tenants.get(tenantId);
    const nf = d && numberTupleFilter(d.strings, filter);
    if (!d || !nf) return emptyPage(cursor);
    const T = d.tuples;
    const s = d.strings.strings;
    return pageRows(T, Math.min(snap, LIVE - 1), at, cursor, pageLimit(pageSize), (r) =>
      tupleRowMatches(T, r, nf) ? makeTuple(T, s, r) : undefined,
    );
  }

  async readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
    at: number = Date.now(),
  ): Promise<Page<Attribute>> {
    const d = this.tenants.get(tenantId);
    const nf = d && numberAttributeFilter(d.strings, filter);
    if (!d || !nf) return emptyPage(cursor);
    const A = d.attributes;
    const s = d.strings.strings;
    return pageRows(A, Math.min(snap, LIVE - 1), at, cursor, pageLimit(pageSize), (r) =>
      attributeRowMatches(A, r, nf) ? makeAttribute(A, s, r) : undefined,
    );
  }

  async changes(tenantId: string, after: Snap, limit: number): Promise<ChangeSet[]> {
    const d = this.tenants.get(tenantId);
    if (!d) return [];
    const log = d.txLog;
    const s = d.strings.strings;
    const T = d.tuples;
    const A = d.attributes;
    const out: ChangeSet[] = [];
    for (let i = firstTxAfter(log, after); i < log.length && out.length < limit; i++) {
      const e = log[i];
      const changes: DataChange[] = [];
      for (const id of e.deletedTuples ?? [])
        changes.push({ operation: "OPERATION_DELETE", tuple: makeTuple(T, s, lowerBound(T.id, T.n, id)) });
      for (const id of e.deletedAttributes ?? []) {
        const attribute = makeAttribute(A, s, lowerBound(A.id, A.n, id));
        changes.push({ operation: "OPERATION_DELETE", attribute });
      }
      // the rows created by e.tx: rows are appended in tx order
      for (let r = lowerBound(T.created, T.n, e.tx); r < T.n && T.created[r] === e.tx; r++)
        changes.push({ operation: "OPERATION_CREATE", tuple: makeTuple(T, s, r) });
      for (let r = lowerBound(A.created, A.n, e.tx); r < A.n && A.created[r] === e.tx; r++)
        changes.push({ operation: "OPERATION_CREATE", attribute: makeAttribute(A, s, r) });
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
    const cutoff = olderThan.getTime();
    let horizon = this.horizon;
    for (const d of this.tenants.values()) {
      for (const e of d.txLog) if (e.at < cutoff && e.tx > horizon) horizon = e.tx;
    }
    return this.collectUpTo(horizon);
  }

  /**
   * gc by snap (replica use: mirror another store's horizon): rows deleted at or before `horizon` and the change
   * feed up to it are dropped, and snaps before it expire. The horizon never moves back. Returns how many rows
   * were removed.
   */
  collectUpTo(horizon: Snap): number {
    if (horizon > this.horizon) this.horizon = horizon;
    let removed = 0;
    for (const d of this.tenants.values()) removed += d.collect(this.horizon);
    return removed;
  }

  async close(): Promise<void> {}
}
