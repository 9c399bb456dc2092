/**
 * The Store over SQL, shared by the SQLite, libSQL and PostgreSQL drivers: they differ only in their executor
 * (how a statement or a transaction runs) and dialect. Engine reads stay synchronous when the executor is.
 */
import { PembaError } from "../../errors.ts";
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../model.ts";
import type {
  BulkExports,
  CombinedReads,
  EmptyTenantDelete,
  EmptyTenants,
  ExportCells,
  FeedRead,
  Freshness,
  FreshnessSource,
  RowCounts,
  TenantHeads,
} from "../capabilities.ts";
import { decodeNumberCursor, decodeStringCursor, encodeCursor } from "../cursor.ts";
import type {
  AttributeQuery,
  ChangeSet,
  DataBundle,
  HeadSchemaRecord,
  MaybePromise,
  Page,
  SchemaRecord,
  Snap,
  Store,
  SubjectTupleQuery,
  Tenant,
  TupleQuery,
  WriteRequest,
} from "../store.ts";
import { both } from "../types.ts";
import { validateWriteRequest } from "../validate.ts";
import type { Statement } from "./dialect.ts";
import type { SqlExecutor, StatementResult } from "./executor.ts";
import {
  createTenantStatement,
  deleteBundleStatement,
  deleteEmptyTenantStatements,
  deleteTenantStatements,
  freshnessStatement,
  gcHorizonStatement,
  gcStatements,
  getTenantStatement,
  headSchemaStatement,
  headSnapStatement,
  listSchemasStatement,
  listTenantsStatement,
  readBundleStatement,
  readSchemaStatement,
  tenantHeadsStatement,
  writeBundleStatement,
  writeSchemaStatements,
} from "./meta-plan.ts";
import {
  buildChangeSets,
  type ChangedRow,
  changedRowsAndHorizonStatement,
  changedRowsStatement,
  changedTxStatement,
  changedTxs,
  countAttributesStatement,
  countTuplesStatement,
  listObjectIdsStatement,
  nextExpiryStatement,
  queryAttributesStatement,
  queryReadsStatement,
  querySubjectTuplesStatement,
  queryTuplesStatement,
  readAttributesStatement,
  readTuplesStatement,
  splitReads,
} from "./read-plan.ts";
import { type Row, rowToAttribute, rowToTuple, type SchemaRow, type TenantRow } from "./rows.ts";
import { planWrite } from "./write-plan.ts";

/** The freshness statement's row. */
function toFreshness(r: {
  head: number;
  horizon: number;
  created_at: number | null;
  schema_version: string | null;
}): Freshness {
  return {
    head: Number(r.head),
    horizon: Number(r.horizon),
    tenantCreatedAt: r.created_at === null || r.created_at === undefined ? undefined : Number(r.created_at),
    headSchemaVersion: typeof r.schema_version === "string" ? r.schema_version : undefined,
  };
}

function then<T, R>(v: MaybePromise<T>, f: (v: T) => R): MaybePromise<R> {
  return v instanceof Promise ? v.then(f) : f(v);
}

const toTenant = (r: TenantRow): Tenant => ({
  id: r.id,
  name: r.name,
  createdAt: new Date(Number(r.created_at)),
});
const toSchema = (r: SchemaRow): SchemaRecord => ({
  version: r.version,
  schema: r.schema,
  createdAt: new Date(Number(r.created_at)),
});
const limitOf = (pageSize: number) => (pageSize > 0 ? pageSize : 1_000_000_000);

function page<R, T>(rows: R[], limit: number, map: (r: R) => T, key: (r: R) => string | number): Page<T> {
  const more = rows.length > limit;
  const items = (more ? rows.slice(0, limit) : rows).map(map);
  return { items, cursor: more ? encodeCursor(key(rows[limit - 1]!)) : "" };
}

export abstract class SqlStore
  implements Store, CombinedReads, FreshnessSource, TenantHeads, EmptyTenants, RowCounts, BulkExports
{
  abstract readonly kind: "sqlite" | "libsql" | "postgres" | "d1";
  protected readonly exec: SqlExecutor;

  constructor(exec: SqlExecutor) {
    this.exec = exec;
  }

  private get d() {
    return this.exec.dialect;
  }

  private async rows<R>(kind: string, s: Statement<R>): Promise<R[]> {
    return await this.exec.all(kind, s);
  }

  // tenants

  async createTenant(id: string, name: string): Promise<Tenant> {
    if (!id) throw new PembaError("ERROR_CODE_VALIDATION", "invalid tenant id");
    const [r] = await this.exec.transaction("create_tenant", [
      createTenantStatement(this.d, id, name, Date.now()),
    ]);
    if (r!.rows.length === 0) throw new PembaError("ERROR_CODE_ALREADY_EXIST");
    return toTenant(r!.rows[0] as TenantRow);
  }

  async getTenant(id: string): Promise<Tenant | undefined> {
    const [row] = await this.rows("get_tenant", getTenantStatement(this.d, id));
    return row !== undefined ? toTenant(row) : undefined;
  }

  async deleteTenant(id: string): Promise<Tenant | undefined> {
    const results = await this.exec.transaction("delete_tenant", deleteTenantStatements(this.d, id));
    const [row] = results[results.length - 1]!.rows;
    return row !== undefined ? toTenant(row as TenantRow) : undefined;
  }

  async deleteEmptyTenant(id: string): Promise<EmptyTenantDelete> {
    const [deleted] = await this.exec.transaction("delete_tenant", deleteEmptyTenantStatements(this.d, id));
    const row = deleted!.rows[0] as TenantRow | undefined;
    if (row !== undefined) return { deleted: toTenant(row) };
    return (await this.getTenant(id)) === undefined ? undefined : { notEmpty: true };
  }

  async listTenants(pageSize: number, cursor?: string): Promise<Page<Tenant>> {
    const after = cursor ? decodeStringCursor(cursor) : "";
    const limit = limitOf(pageSize);
    const rows = await this.rows("list_tenants", listTenantsStatement(this.d, after, limit + 1));
    return page(rows, limit, toTenant, (r) => r.id);
  }

  // schemas

  async writeSchema(tenantId: string, version: string, schema: string): Promise<void> {
    await this.exec.transaction(
      "write_schema",
      writeSchemaStatements(this.d, tenantId, version, schema, Date.now()),
      tenantId,
    );
  }

  async readSchema(tenantId: string, version: string): Promise<SchemaRecord | undefined> {
    const [row] = await this.rows("read_schema", readSchemaStatement(this.d, tenantId, version));
    return row !== undefined ? toSchema(row) : undefined;
  }

  /** The head snap comes from the same statement: one snapshot of the database for both. */
  async headSchema(tenantId: string): Promise<HeadSchemaRecord | undefined> {
    const [row] = await this.rows("read_schema", headSchemaStatement(this.d, tenantId));
    return row !== undefined ? { ...toSchema(row), readAt: Number(row.read_at) } : undefined;
  }

  async listSchemas(tenantId: string, pageSize: number, cursor?: string): Promise<Page<SchemaRecord>> {
    const before = cursor ? decodeNumberCursor(cursor) : Number.MAX_SAFE_INTEGER;
    const limit = limitOf(pageSize);
    const rows = await this.rows("list_schemas", listSchemasStatement(this.d, tenantId, before, limit + 1));
    return page(rows, limit, toSchema, (r) => Number(r.seq));
  }

  // writes

  async write(tenantId: string, req: WriteRequest): Promise<Snap> {
    const [results] = await this.runWrite(tenantId, req, []);
    return Number(results[0]!.rows[0]!.value);
  }

  /** The write's statements and then `after` in ONE transaction: [the write's results, `after`'s results]. */
  private async runWrite(
    tenantId: string,
    req: WriteRequest,
    after: Statement[],
  ): Promise<[StatementResult[], StatementResult[]]> {
    validateWriteRequest(req);
    const plan = planWrite(this.d, tenantId, req, Date.now());
    // PostgreSQL's first statement checks the tenant itself while taking its row lock (nextTxStatement)
    const results = await this.exec.transaction(
      "write",
      [...plan, ...after],
      this.d.name === "pg" ? undefined : tenantId,
    );
    return [results.slice(0, plan.length), results.slice(plan.length)];
  }

  /**
   * A write that also reads the tenant's change feed after `after` and the GC horizon in its own transaction (see
   * WriteFeed; a driver whose writes hold their tenant's row lock offers it). The feed's rows are read up to the
   * open end: none of the tenant past the write's own snap can be committed yet, so the rows changed after `after`
   * name every transaction of the feed (a set per transaction that changed a row; the horizon read with them):
   * no separate read of the transaction ids. All of them are returned.
   */
  protected async writeAndReadFeed(tenantId: string, req: WriteRequest, after: Snap): Promise<FeedRead> {
    const [write, [read]] = await this.runWrite(tenantId, req, [
      changedRowsAndHorizonStatement(this.d, tenantId, after + 1, Number.MAX_SAFE_INTEGER),
    ]);
    const rows = read!.rows as (Partial<ChangedRow> & { horizon: number })[];
    const horizon = Number(rows[0]!.horizon);
    // no changed row: the one row holds only the horizon
    const changed = (rows[0]!.kind === null ? [] : rows) as ChangedRow[];
    return {
      snap: Number(write[0]!.rows[0]!.value),
      sets: buildChangeSets(changedTxs(changed, Math.max(after, horizon)), changed),
      horizon,
    };
  }

  headSnap(tenantId: string): MaybePromise<Snap> {
    return then(this.exec.all("head_snap", headSnapStatement(this.d, tenantId)), ([r]) => Number(r!.value));
  }

  async tenantHeads(): Promise<Map<string, Snap>> {
    const rows = await this.rows("tenant_heads", tenantHeadsStatement(this.d));
    return new Map(rows.map((r) => [r.id, Number(r.head)]));
  }

  /**
   * The head snap, the GC horizon, the tenant's created_at and its head schema version in ONE statement (the lazy
   * replica's look).
   */
  freshness(tenantId: string): MaybePromise<Freshness> {
    return then(this.exec.all("freshness", freshnessStatement(this.d, tenantId)), ([row]) =>
      toFreshness(row!),
    );
  }

  /**
   * The freshness look and the tenant's change feed after `after`, in ONE round trip where the driver batches reads
   * (D1), else the look then (when the head moved) the feed. Every change committed before the feed's read is in it (transaction ids are
   * assigned in commit order), so the caller is caught up to max(head, the last change set's snap). The feed is not
   * cut at the GC horizon: the caller reloads when the horizon passed `after`.
   */
  async freshnessAndChanges(
    tenantId: string,
    after: Snap,
  ): Promise<{ freshness: Freshness; changes: ChangeSet[] }> {
    const look = freshnessStatement(this.d, tenantId);
    const feed = changedRowsStatement(this.d, tenantId, after + 1, Number.MAX_SAFE_INTEGER);
    let lookRows: Row[];
    let rows: Row[];
    if (this.exec.readBatch !== undefined) {
      [lookRows = [], rows = []] = await this.exec.readBatch("freshness", [look, feed]);
    } else {
      lookRows = await this.rows("freshness", look);
      rows = Number(lookRows[0]?.head) > after ? await this.rows("changes", feed) : [];
    }
    const changed = rows as unknown as ChangedRow[];
    return {
      freshness: toFreshness(lookRows[0] as unknown as Parameters<typeof toFreshness>[0]),
      changes: buildChangeSets(changedTxs(changed, after), changed),
    };
  }

  /** The GC horizon: reads at snaps below it are expired (the replica caches it instead of asking per read). */
  gcHorizon(): MaybePromise<Snap> {
    return then(this.exec.all("gc_horizon", gcHorizonStatement(this.d)), ([r]) => Number(r!.value));
  }

  nextExpiry(tenantId: string): MaybePromise<number | undefined> {
    return then(this.exec.all("next_expiry", nextExpiryStatement(this.d, tenantId)), ([r]) =>
      r?.next == null ? undefined : Number(r.next),
    );
  }

  assertSnapReadable(_tenantId: string, snap: Snap): MaybePromise<void> {
    return then(this.exec.all("gc_horizon", gcHorizonStatement(this.d)), ([r]) => {
      if (snap < Number(r!.value)) throw new PembaError("ERROR_CODE_SNAP_TOKEN_EXPIRED");
    });
  }

  // engine reads

  queryTuples(tenantId: string, snap: Snap, queries: TupleQuery[], at = Date.now()): MaybePromise<Tuple[]> {
    const s = queryTuplesStatement(this.d, tenantId, snap, queries, at);
    return then(this.exec.all("query_tuples", s), (rows) => rows.map(rowToTuple));
  }

  querySubjectTuples(
    tenantId: string,
    snap: Snap,
    queries: SubjectTupleQuery[],
    at = Date.now(),
  ): MaybePromise<Tuple[]> {
    const s = querySubjectTuplesStatement(this.d, tenantId, snap, queries, at);
    return then(this.exec.all("query_subject_tuples", s), (rows) => rows.map(rowToTuple));
  }

  queryAttributes(
    tenantId: string,
    snap: Snap,
    queries: AttributeQuery[],
    at = Date.now(),
  ): MaybePromise<Attribute[]> {
    const s = queryAttributesStatement(this.d, tenantId, snap, queries, at);
    return then(this.exec.all("query_attributes", s), (rows) => rows.map(rowToAttribute));
  }

  queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
    at = Date.now(),
  ): MaybePromise<[Tuple[], Attribute[]]> {
    const s = queryReadsStatement(this.d, tenantId, snap, tuples, attributes, at);
    if (s.params.length <= this.d.maxParams) return then(this.exec.all("query_reads", s), splitReads);
    // too many parameters for one statement (D1: 100): the two reads separately
    return both(
      this.queryTuples(tenantId, snap, tuples, at),
      this.queryAttributes(tenantId, snap, attributes, at),
    );
  }

  listObjectIds(tenantId: string, snap: Snap, type: string, at = Date.now()): MaybePromise<string[]> {
    const s = listObjectIdsStatement(this.d, tenantId, snap, type, at);
    return then(this.exec.all("list_object_ids", s), (rows) => rows.map((r) => r.id).sort());
  }

  // filtered, paged reads

  async readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
    at = Date.now(),
  ): Promise<Page<Tuple>> {
    const limit = limitOf(pageSize);
    const after = cursor ? decodeNumberCursor(cursor) : 0;
    const s = readTuplesStatement(this.d, tenantId, snap, at, filter, after, limit + 1);
    const rows = await this.rows("read_tuples", s);
    return page(rows, limit, rowToTuple, (r) => Number(r.id));
  }

  /**
   * Every row of `table` visible at `snap`, expired ones included, in id order: the paged read without a filter,
   * its rows as cells (the driver's `allCells`, else each row's values in select order).
   */
  async *exportPages(
    tenantId: string,
    snap: Snap,
    table: "tuples" | "attributes",
    pageSize: number,
  ): AsyncGenerator<ExportCells[]> {
    const limit = limitOf(pageSize);
    const read = table === "tuples" ? readTuplesStatement : readAttributesStatement;
    const kind = `export_${table}`;
    for (let after = 0; ; ) {
      const s = read(this.d, tenantId, snap, 0, {}, after, limit) as Statement;
      const rows =
        this.exec.allCells !== undefined
          ? await this.exec.allCells(kind, s)
          : (await this.exec.all(kind, s)).map((r) => Object.values(r as Row));
      if (rows.length > 0) yield rows;
      if (rows.length < limit) return;
      after = Number(rows[rows.length - 1]![0]);
    }
  }

  async countTuples(tenantId: string, snap: Snap, filter: TupleFilter, at = Date.now()): Promise<number> {
    const [row] = await this.rows("count_tuples", countTuplesStatement(this.d, tenantId, snap, at, filter));
    return Number(row?.n ?? 0);
  }

  async countAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    at = Date.now(),
  ): Promise<number> {
    const s = countAttributesStatement(this.d, tenantId, snap, at, filter);
    const [row] = await this.rows("count_attributes", s);
    return Number(row?.n ?? 0);
  }

  async readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
    at = Date.now(),
  ): Promise<Page<Attribute>> {
    const limit = limitOf(pageSize);
    const after = cursor ? decodeNumberCursor(cursor) : 0;
    const s = readAttributesStatement(this.d, tenantId, snap, at, filter, after, limit + 1);
    const rows = await this.rows("read_attributes", s);
    return page(rows, limit, rowToAttribute, (r) => Number(r.id));
  }

  async changes(tenantId: string, after: Snap, limit: number): Promise<ChangeSet[]> {
    const txs = (await this.rows("changes", changedTxStatement(this.d, tenantId, after, limit))).map((r) =>
      Number(r.tx),
    );
    if (txs.length === 0) return [];
    const rows = await this.rows(
      "changes",
      changedRowsStatement(this.d, tenantId, txs[0]!, txs[txs.length - 1]!),
    );
    return buildChangeSets(txs, rows);
  }

  // bundles

  async writeBundles(tenantId: string, bundles: DataBundle[]): Promise<void> {
    await this.exec.transaction(
      "write_bundles",
      bundles.map((b) => writeBundleStatement(this.d, tenantId, b.name, JSON.stringify(b))),
      tenantId,
    );
  }

  async readBundle(tenantId: string, name: string): Promise<DataBundle | undefined> {
    const [row] = await this.rows("read_bundle", readBundleStatement(this.d, tenantId, name));
    return row !== undefined ? (JSON.parse(row.payload) as DataBundle) : undefined;
  }

  async deleteBundle(tenantId: string, name: string): Promise<boolean> {
    const [r] = await this.exec.transaction("delete_bundle", [deleteBundleStatement(this.d, tenantId, name)]);
    return r!.changes > 0;
  }

  async gc(olderThan: Date): Promise<number> {
    const { horizon, collect } = gcStatements(this.d, olderThan.getTime());
    const removed = (results: StatementResult[]) => results[0]!.changes + results[1]!.changes;
    if (this.d.name !== "pg") {
      return removed((await this.exec.transaction("gc", [...horizon, ...collect])).slice(horizon.length));
    }
    await this.exec.transaction("gc", horizon);
    return removed(await this.exec.transaction("gc", collect));
  }

  async close(): Promise<void> {
    await this.exec.close();
  }
}
