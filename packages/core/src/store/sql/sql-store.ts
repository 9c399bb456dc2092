/**
 * The Store over SQL, shared by the SQLite, libSQL and PostgreSQL drivers: they differ only in their executor
 * (how a statement or a transaction runs) and dialect. Engine reads stay synchronous when the executor is.
 */
import { PembaError } from "../../errors.ts";
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../model.ts";
import type { CombinedReads, Freshness, FreshnessSource } from "../capabilities.ts";
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
import { validateWriteRequest } from "../validate.ts";
import type { Row, SqlExecutor } from "./executor.ts";
import { rowToAttribute, rowToTuple } from "./fragments.ts";
import {
  buildChangeSets,
  changedRowsStatement,
  changedTxStatement,
  listObjectIdsStatement,
  queryAttributesStatement,
  queryReadsStatement,
  querySubjectTuplesStatement,
  queryTuplesStatement,
  readAttributesStatement,
  readTuplesStatement,
  splitReads,
} from "./read-plan.ts";
import { planWrite } from "./write-plan.ts";

function then<T, R>(v: MaybePromise<T>, f: (v: T) => R): MaybePromise<R> {
  return v instanceof Promise ? v.then(f) : f(v);
}

const toTenant = (r: Row): Tenant => ({
  id: r.id as string,
  name: r.name as string,
  createdAt: new Date(Number(r.created_at)),
});
const toSchema = (r: Row): SchemaRecord => ({
  version: r.version as string,
  schema: r.schema as string,
  createdAt: new Date(Number(r.created_at)),
});
const limitOf = (pageSize: number) => (pageSize > 0 ? pageSize : 1_000_000_000);

function page<T>(rows: Row[], limit: number, map: (r: Row) => T, key: (r: Row) => string | number): Page<T> {
  const more = rows.length > limit;
  const items = (more ? rows.slice(0, limit) : rows).map(map);
  return { items, cursor: more ? encodeCursor(key(rows[limit - 1])) : "" };
}

export abstract class SqlStore implements Store, CombinedReads, FreshnessSource {
  abstract readonly kind: "sqlite" | "libsql" | "postgres" | "d1";
  protected readonly exec: SqlExecutor;

  constructor(exec: SqlExecutor) {
    this.exec = exec;
  }

  private async rows(kind: string, s: { sql: string; params: unknown[] }): Promise<Row[]> {
    return await this.exec.all(kind, s.sql, s.params);
  }

  // tenants

  async createTenant(id: string, name: string): Promise<Tenant> {
    if (!id) throw new PembaError("ERROR_CODE_VALIDATION", "invalid tenant id");
    const [r] = await this.exec.transaction("create_tenant", [
      {
        sql: "INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING id, name, created_at",
        params: [id, name, Date.now()],
      },
    ]);
    if (r.rows.length === 0) throw new PembaError("ERROR_CODE_ALREADY_EXIST");
    return toTenant(r.rows[0]);
  }

  async getTenant(id: string): Promise<Tenant | undefined> {
    const rows = await this.rows("get_tenant", {
      sql: "SELECT id, name, created_at FROM tenants WHERE id = ?",
      params: [id],
    });
    return rows.length > 0 ? toTenant(rows[0]) : undefined;
  }

  async deleteTenant(id: string): Promise<Tenant | undefined> {
    const tables = ["tuples", "attributes", "schemas", "bundles", "transactions"];
    const results = await this.exec.transaction("delete_tenant", [
      ...tables.map((t) => ({ sql: `DELETE FROM ${t} WHERE tenant_id = ?`, params: [id] })),
      { sql: "DELETE FROM tenants WHERE id = ? RETURNING id, name, created_at", params: [id] },
    ]);
    const last = results[results.length - 1].rows;
    return last.length > 0 ? toTenant(last[0]) : undefined;
  }

  async listTenants(pageSize: number, cursor?: string): Promise<Page<Tenant>> {
    const after = cursor ? decodeStringCursor(cursor) : "";
    const limit = limitOf(pageSize);
    const id = this.exec.dialect.orderText("id");
    const rows = await this.rows("list_tenants", {
      sql: `SELECT id, name, created_at FROM tenants WHERE ${id} > ? ORDER BY ${id} LIMIT ?`,
      params: [after, limit + 1],
    });
    return page(rows, limit, toTenant, (r) => r.id as string);
  }

  // schemas

  async writeSchema(tenantId: string, version: string, schema: string): Promise<void> {
    await this.exec.transaction(
      "write_schema",
      [
        { sql: "DELETE FROM schemas WHERE tenant_id = ? AND version = ?", params: [tenantId, version] },
        {
          sql: "INSERT INTO schemas (tenant_id, version, schema, created_at) VALUES (?, ?, ?, ?)",
          params: [tenantId, version, schema, Date.now()],
        },
      ],
      tenantId,
    );
  }

  async readSchema(tenantId: string, version: string): Promise<SchemaRecord | undefined> {
    const rows = await this.rows("read_schema", {
      sql: "SELECT version, schema, created_at FROM schemas WHERE tenant_id = ? AND version = ?",
      params: [tenantId, version],
    });
    return rows.length > 0 ? toSchema(rows[0]) : undefined;
  }

  /** The head snap comes from the same statement: one snapshot of the database for both. */
  async headSchema(tenantId: string): Promise<HeadSchemaRecord | undefined> {
    const rows = await this.rows("read_schema", {
      sql: `SELECT version, schema, created_at, (SELECT value FROM pemba_meta WHERE key = 'tx') AS read_at
        FROM schemas WHERE tenant_id = ? ORDER BY seq DESC LIMIT 1`,
      params: [tenantId],
    });
    return rows.length > 0 ? { ...toSchema(rows[0]), readAt: Number(rows[0].read_at) } : undefined;
  }

  async listSchemas(tenantId: string, pageSize: number, cursor?: string): Promise<Page<SchemaRecord>> {
    const before = cursor ? decodeNumberCursor(cursor) : Number.MAX_SAFE_INTEGER;
    const limit = limitOf(pageSize);
    const rows = await this.rows("list_schemas", {
      sql: "SELECT seq, version, schema, created_at FROM schemas WHERE tenant_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
      params: [tenantId, before, limit + 1],
    });
    return page(rows, limit, toSchema, (r) => Number(r.seq));
  }

  // writes

  async write(tenantId: string, req: WriteRequest): Promise<Snap> {
    validateWriteRequest(req);
    const results = await this.exec.transaction(
      "write",
      planWrite(this.exec.dialect, tenantId, req, Date.now()),
      tenantId,
    );
    return Number(results[0].rows[0].value);
  }

  headSnap(_tenantId: string): MaybePromise<Snap> {
    return then(this.exec.all("head_snap", "SELECT value FROM pemba_meta WHERE key = 'tx'", []), (rows) =>
      Number(rows[0].value),
    );
  }

  /**
   * The head snap, the GC horizon, the tenant's created_at and its head schema version in ONE statement (the lazy
   * replica's look).
   */
  freshness(tenantId: string): MaybePromise<Freshness> {
    return then(
      this.exec.all(
        "freshness",
        `SELECT (SELECT value FROM pemba_meta WHERE key = 'tx') AS head,
          (SELECT value FROM pemba_meta WHERE key = 'gc_horizon') AS horizon,
          (SELECT created_at FROM tenants WHERE id = ?) AS created_at,
          (SELECT version FROM schemas WHERE tenant_id = ? ORDER BY seq DESC LIMIT 1) AS schema_version`,
        [tenantId, tenantId],
      ),
      ([r]) => ({
        head: Number(r.head),
        horizon: Number(r.horizon),
        tenantCreatedAt:
          r.created_at === null || r.created_at === undefined ? undefined : Number(r.created_at),
        headSchemaVersion: typeof r.schema_version === "string" ? r.schema_version : undefined,
      }),
    );
  }

  /** The GC horizon: reads at snaps below it are expired (the replica caches it instead of asking per read). */
  gcHorizon(): MaybePromise<Snap> {
    return then(
      this.exec.all("gc_horizon", "SELECT value FROM pemba_meta WHERE key = 'gc_horizon'", []),
      (rows) => Number(rows[0].value),
    );
  }

  assertSnapReadable(_tenantId: string, snap: Snap): MaybePromise<void> {
    return then(
      this.exec.all("gc_horizon", "SELECT value FROM pemba_meta WHERE key = 'gc_horizon'", []),
      (rows) => {
        if (snap < Number(rows[0].value)) throw new PembaError("ERROR_CODE_SNAP_TOKEN_EXPIRED");
      },
    );
  }

  // engine reads

  queryTuples(tenantId: string, snap: Snap, queries: TupleQuery[]): MaybePromise<Tuple[]> {
    const s = queryTuplesStatement(this.exec.dialect, tenantId, snap, queries);
    return then(this.exec.all("query_tuples", s.sql, s.params), (rows) => rows.map(rowToTuple));
  }

  querySubjectTuples(tenantId: string, snap: Snap, queries: SubjectTupleQuery[]): MaybePromise<Tuple[]> {
    const s = querySubjectTuplesStatement(this.exec.dialect, tenantId, snap, queries);
    return then(this.exec.all("query_subject_tuples", s.sql, s.params), (rows) => rows.map(rowToTuple));
  }

  queryAttributes(tenantId: string, snap: Snap, queries: AttributeQuery[]): MaybePromise<Attribute[]> {
    const s = queryAttributesStatement(this.exec.dialect, tenantId, snap, queries);
    return then(this.exec.all("query_attributes", s.sql, s.params), (rows) => rows.map(rowToAttribute));
  }

  queryTuplesAndAttributes(
    tenantId: string,
    snap: Snap,
    tuples: TupleQuery[],
    attributes: AttributeQuery[],
  ): MaybePromise<[Tuple[], Attribute[]]> {
    const s = queryReadsStatement(this.exec.dialect, tenantId, snap, tuples, attributes);
    if (s.params.length <= this.exec.dialect.maxParams) {
      return then(this.exec.all("query_reads", s.sql, s.params), splitReads);
    }
    // too many parameters for one statement (D1: 100): the two reads separately
    const t = this.queryTuples(tenantId, snap, tuples);
    const a = this.queryAttributes(tenantId, snap, attributes);
    if (t instanceof Promise || a instanceof Promise) return Promise.all([t, a]);
    return [t, a];
  }

  listObjectIds(tenantId: string, snap: Snap, type: string): MaybePromise<string[]> {
    const s = listObjectIdsStatement(this.exec.dialect, tenantId, snap, type);
    return then(this.exec.all("list_object_ids", s.sql, s.params), (rows) =>
      rows.map((r) => r.id as string).sort(),
    );
  }

  // filtered, paged reads

  async readTuples(
    tenantId: string,
    snap: Snap,
    filter: TupleFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Tuple>> {
    const limit = limitOf(pageSize);
    const after = cursor ? decodeNumberCursor(cursor) : 0;
    const rows = await this.rows(
      "read_tuples",
      readTuplesStatement(this.exec.dialect, tenantId, snap, filter, after, limit + 1),
    );
    return page(rows, limit, rowToTuple, (r) => Number(r.id));
  }

  async readAttributes(
    tenantId: string,
    snap: Snap,
    filter: AttributeFilter,
    pageSize: number,
    cursor?: string,
  ): Promise<Page<Attribute>> {
    const limit = limitOf(pageSize);
    const after = cursor ? decodeNumberCursor(cursor) : 0;
    const s = readAttributesStatement(this.exec.dialect, tenantId, snap, filter, after, limit + 1);
    const rows = await this.rows("read_attributes", s);
    return page(rows, limit, rowToAttribute, (r) => Number(r.id));
  }

  async changes(tenantId: string, after: Snap, limit: number): Promise<ChangeSet[]> {
    const txs = (await this.rows("changes", changedTxStatement(tenantId, after, limit))).map((r) =>
      Number(r.tx),
    );
    if (txs.length === 0) return [];
    const rows = await this.rows("changes", changedRowsStatement(tenantId, txs[0], txs[txs.length - 1]));
    return buildChangeSets(txs, rows);
  }

  // bundles

  async writeBundles(tenantId: string, bundles: DataBundle[]): Promise<void> {
    await this.exec.transaction(
      "write_bundles",
      bundles.map((b) => ({
        sql: `INSERT INTO bundles (tenant_id, name, payload) VALUES (?, ?, ?)
          ON CONFLICT (tenant_id, name) DO UPDATE SET payload = excluded.payload`,
        params: [tenantId, b.name, JSON.stringify(b)],
      })),
      tenantId,
    );
  }

  async readBundle(tenantId: string, name: string): Promise<DataBundle | undefined> {
    const rows = await this.rows("read_bundle", {
      sql: "SELECT payload FROM bundles WHERE tenant_id = ? AND name = ?",
      params: [tenantId, name],
    });
    return rows.length > 0 ? (JSON.parse(rows[0].payload as string) as DataBundle) : undefined;
  }

  async deleteBundle(tenantId: string, name: string): Promise<boolean> {
    const [r] = await this.exec.transaction("delete_bundle", [
      { sql: "DELETE FROM bundles WHERE tenant_id = ? AND name = ?", params: [tenantId, name] },
    ]);
    return r.changes > 0;
  }

  async gc(olderThan: Date): Promise<number> {
    const cutoff = "(SELECT COALESCE(MAX(id), 0) FROM transactions WHERE created_at < ?)";
    const horizon = "(SELECT value FROM pemba_meta WHERE key = 'gc_horizon')";
    const at = olderThan.getTime();
    const results = await this.exec.transaction("gc", [
      {
        sql: `UPDATE pemba_meta SET value = ${cutoff} WHERE key = 'gc_horizon' AND value < ${cutoff}`,
        params: [at, at],
      },
      { sql: `DELETE FROM tuples WHERE deleted_tx <= ${horizon}`, params: [] },
      { sql: `DELETE FROM attributes WHERE deleted_tx <= ${horizon}`, params: [] },
      { sql: `DELETE FROM transactions WHERE id < ${horizon}`, params: [] },
    ]);
    return results[1].changes + results[2].changes;
  }

  async close(): Promise<void> {
    await this.exec.close();
  }
}
