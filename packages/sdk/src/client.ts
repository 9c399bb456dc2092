/**
 * PembaClient: one method per endpoint of Pemba's (Permify-compatible) HTTP API, over `fetch`, for Node,
 * browsers and Workers alike. Reads retry, writes do not (unless asked); paged reads also come as async
 * iterators over every page; checks made in the same tick are batched into bulk checks.
 */
import { AuthzenClient } from "./authzen.ts";
import { CheckBatcher } from "./check-batcher.ts";
import { readNdjson } from "./ndjson.ts";
import {
  type AllPages,
  type CheckResult,
  type EntityInput,
  type ExpandNode,
  type ExplainAnswer,
  type SubjectInput,
  toEntity,
  toSubject,
  type WatchChanges,
  type WithOptionalMetadata,
} from "./requests.ts";
import { type CallOptions, Transport, type TransportOptions } from "./transport.ts";
import type {
  AttributeReadRequest,
  AttributeReadResponse,
  BundleReadResponse,
  Context,
  DataBundle,
  DataDeleteRequest,
  DataWriteRequest,
  PermissionBulkCheckRequest,
  PermissionBulkCheckRequestItem,
  PermissionBulkCheckResponse,
  PermissionCheckRequest,
  PermissionCheckRequestMetadata,
  PermissionCheckResponse,
  PermissionExpandRequest,
  PermissionLookupEntityRequest,
  PermissionLookupEntityResponse,
  PermissionLookupEntityStreamResponse,
  PermissionLookupSubjectRequest,
  PermissionLookupSubjectResponse,
  PermissionSubjectPermissionRequest,
  PermissionSubjectPermissionResponse,
  RelationshipDeleteRequest,
  RelationshipReadRequest,
  RelationshipReadResponse,
  RelationshipWriteRequest,
  SchemaDiffRequest,
  SchemaDiffResponse,
  SchemaListRequest,
  SchemaListResponse,
  SchemaPartialWriteRequest,
  SchemaReadRequest,
  SchemaReadResponse,
  SnapTokenResponse,
  TenantCreateRequest,
  TenantCreateResponse,
  TenantListRequest,
  TenantListResponse,
  WatchResponse,
} from "./wire.gen.ts";

export interface ClientOptions extends TransportOptions {
  /** Tenant of every call (default "t1", the tenant Pemba and Permify create at start). */
  tenantId?: string;
  /** Default `metadata.depth` of permission calls (default 20; Permify requires >= 3). */
  depth?: number;
  /**
   * "session": every read that names no snap token uses the token of this client's last write, so a caller
   * reads its own writes. "default" (the default): reads without a token see the newest data.
   */
  consistency?: "default" | "session";
  /** Batch `check()` calls of the same tick into bulk checks (default true; `maxItems` at most 100). */
  batchChecks?: boolean | { maxItems?: number };
}

/** A tenant as the server lists it. */
export type Tenant = TenantCreateResponse["tenant"];
export type SchemaVersionInfo = SchemaListResponse["schemas"][number];

const MAX_BULK_ITEMS = 100;

interface SharedState {
  transport: Transport;
  options: ClientOptions;
}

export class PembaClient {
  readonly tenantId: string;
  readonly #transport: Transport;
  readonly #options: ClientOptions;
  readonly #depth: number;
  readonly #session: boolean;
  readonly #batcher: CheckBatcher | undefined;
  #lastWriteToken = "";
  /** The tenant's AuthZEN decision point: evaluate, evaluations, searchSubjects/Resources/Actions. */
  readonly authzen: AuthzenClient;

  constructor(options: ClientOptions, shared?: SharedState) {
    this.#options = options;
    this.#transport = shared?.transport ?? new Transport(options);
    this.tenantId = options.tenantId ?? "t1";
    this.authzen = new AuthzenClient(this.#transport, `/v1/tenants/${encodeURIComponent(this.tenantId)}`);
    this.#depth = options.depth ?? 20;
    this.#session = options.consistency === "session";
    const batching = options.batchChecks ?? true;
    this.#batcher =
      batching === false
        ? undefined
        : new CheckBatcher(
            {
              one: (item, metadata) => this.#checkNow({ ...item, metadata }),
              bulk: async (items, metadata) => (await this.#bulkNow({ items, metadata })).results,
            },
            batching === true ? MAX_BULK_ITEMS : (batching.maxItems ?? MAX_BULK_ITEMS),
          );
  }

  /** The same connection settings for another tenant (its own session token and batches). */
  withTenant(tenantId: string): PembaClient {
    return new PembaClient(
      { ...this.#options, tenantId },
      { transport: this.#transport, options: this.#options },
    );
  }

  /** The snap token of this client's last write ("" before any); session reads use it. */
  get lastWriteToken(): string {
    return this.#lastWriteToken;
  }

  // ---- permissions ----

  /** Permission check. Calls of the same tick (no context, no call options) share one bulk-check request. */
  check(
    req: WithOptionalMetadata<PermissionCheckRequest>,
    call?: CallOptions,
  ): Promise<PermissionCheckResponse> {
    const metadata = this.#checkMetadata(req.metadata);
    const plain = req.context === undefined && (req.arguments?.length ?? 0) === 0 && call === undefined;
    if (this.#batcher !== undefined && plain) {
      return this.#batcher.check(
        { entity: req.entity, permission: req.permission, subject: req.subject },
        metadata,
      );
    }
    return this.#checkNow({ ...req, metadata }, call);
  }

  /** True when `subject` has `permission` on `entity`; refs may be strings ("doc:1", "group:2#member"). */
  async can(
    entity: EntityInput,
    permission: string,
    subject: SubjectInput,
    context?: Context,
    call?: CallOptions,
  ): Promise<boolean> {
    const res = await this.check(
      { entity: toEntity(entity), permission, subject: toSubject(subject), context },
      call,
    );
    return res.can === "CHECK_RESULT_ALLOWED";
  }

  /**
   * Pemba's explain (an extension: Permify has no such endpoint): the check request, answered with the decision
   * and its proof (for ALLOWED the granting path hop by hop, for DENIED every branch tried and why it failed).
   */
  explain(req: WithOptionalMetadata<PermissionCheckRequest>, call?: CallOptions): Promise<ExplainAnswer> {
    return this.#read("permissions/explain", { ...req, metadata: this.#checkMetadata(req.metadata) }, call);
  }

  /** Bulk check; more than 100 items go out as several requests (answers in order). */
  async bulkCheck(
    req: WithOptionalMetadata<PermissionBulkCheckRequest>,
    call?: CallOptions,
  ): Promise<PermissionBulkCheckResponse> {
    const metadata = this.#checkMetadata(req.metadata);
    const chunks: PermissionBulkCheckRequestItem[][] = [];
    for (let i = 0; i < req.items.length; i += MAX_BULK_ITEMS)
      chunks.push(req.items.slice(i, i + MAX_BULK_ITEMS));
    if (chunks.length <= 1) return this.#bulkNow({ ...req, metadata }, call);
    const answers = await Promise.all(
      chunks.map((items) => this.#bulkNow({ ...req, items, metadata }, call)),
    );
    return { results: answers.flatMap((a) => a.results) };
  }

  async expand(
    req: WithOptionalMetadata<PermissionExpandRequest>,
    call?: CallOptions,
  ): Promise<{ tree: ExpandNode }> {
    const metadata = {
      schema_version: "",
      ...req.metadata,
      snap_token: this.#readToken(req.metadata?.snap_token),
    };
    return this.#read("permissions/expand", { ...req, metadata }, call);
  }

  /** One page of entity ids; see `lookupEntities` for all of them. */
  lookupEntity(
    req: WithOptionalMetadata<PermissionLookupEntityRequest>,
    call?: CallOptions,
  ): Promise<PermissionLookupEntityResponse> {
    return this.#read(
      "permissions/lookup-entity",
      { ...req, metadata: this.#checkMetadata(req.metadata) },
      call,
    );
  }

  /** Every entity id, page after page (one request per `page_size` ids). */
  async *lookupEntities(
    req: AllPages<PermissionLookupEntityRequest>,
    call?: CallOptions,
  ): AsyncGenerator<string> {
    const metadata = this.#checkMetadata(req.metadata);
    yield* pages(async (continuous_token) => {
      const page = await this.lookupEntity({ ...req, metadata, continuous_token }, call);
      return { items: page.entity_ids, next: page.continuous_token };
    });
  }

  /** lookup-entity-stream: entity ids as the server streams them (NDJSON). */
  async *lookupEntityStream(
    req: WithOptionalMetadata<PermissionLookupEntityRequest>,
    call?: CallOptions,
  ): AsyncGenerator<PermissionLookupEntityStreamResponse["result"]> {
    const body = { ...req, metadata: this.#checkMetadata(req.metadata) };
    const path = this.#tenantPath("permissions/lookup-entity-stream");
    const res = await this.#transport.stream("POST", path, body, call);
    for await (const line of readNdjson<PermissionLookupEntityStreamResponse>(
      res,
      this.#transport.baseUrl + path,
    )) {
      yield line.result;
    }
  }

  /** One page of subject ids; see `lookupSubjects` for all of them. */
  lookupSubject(
    req: WithOptionalMetadata<PermissionLookupSubjectRequest>,
    call?: CallOptions,
  ): Promise<PermissionLookupSubjectResponse> {
    return this.#read(
      "permissions/lookup-subject",
      { ...req, metadata: this.#checkMetadata(req.metadata) },
      call,
    );
  }

  async *lookupSubjects(
    req: AllPages<PermissionLookupSubjectRequest>,
    call?: CallOptions,
  ): AsyncGenerator<string> {
    const metadata = this.#checkMetadata(req.metadata);
    yield* pages(async (continuous_token) => {
      const page = await this.lookupSubject({ ...req, metadata, continuous_token }, call);
      return { items: page.subject_ids, next: page.continuous_token };
    });
  }

  subjectPermission(
    req: WithOptionalMetadata<PermissionSubjectPermissionRequest>,
    call?: CallOptions,
  ): Promise<PermissionSubjectPermissionResponse> {
    const metadata = {
      ...this.#checkMetadata(req.metadata),
      only_permission: req.metadata?.only_permission ?? false,
    };
    return this.#read("permissions/subject-permission", { ...req, metadata }, call);
  }

  // ---- data ----

  writeData(req: WithOptionalMetadata<DataWriteRequest>, call?: CallOptions): Promise<SnapTokenResponse> {
    return this.#write("data/write", { ...req, metadata: { schema_version: "", ...req.metadata } }, call);
  }

  writeRelationships(
    req: WithOptionalMetadata<RelationshipWriteRequest>,
    call?: CallOptions,
  ): Promise<SnapTokenResponse> {
    return this.#write(
      "relationships/write",
      { ...req, metadata: { schema_version: "", ...req.metadata } },
      call,
    );
  }

  /** One page of tuples; see `relationships` for all of them. */
  readRelationships(
    req: WithOptionalMetadata<RelationshipReadRequest>,
    call?: CallOptions,
  ): Promise<RelationshipReadResponse> {
    const metadata = { snap_token: this.#readToken(req.metadata?.snap_token) };
    return this.#read("data/relationships/read", { ...req, metadata }, call);
  }

  async *relationships(req: AllPages<RelationshipReadRequest>, call?: CallOptions) {
    const metadata = { snap_token: this.#readToken(req.metadata?.snap_token) };
    yield* pages(async (continuous_token) => {
      const page = await this.readRelationships({ ...req, metadata, continuous_token }, call);
      return { items: page.tuples, next: page.continuous_token };
    });
  }

  /** One page of attributes; see `attributes` for all of them. */
  readAttributes(
    req: WithOptionalMetadata<AttributeReadRequest>,
    call?: CallOptions,
  ): Promise<AttributeReadResponse> {
    const metadata = { snap_token: this.#readToken(req.metadata?.snap_token) };
    return this.#read("data/attributes/read", { ...req, metadata }, call);
  }

  async *attributes(req: AllPages<AttributeReadRequest>, call?: CallOptions) {
    const metadata = { snap_token: this.#readToken(req.metadata?.snap_token) };
    yield* pages(async (continuous_token) => {
      const page = await this.readAttributes({ ...req, metadata, continuous_token }, call);
      return { items: page.attributes, next: page.continuous_token };
    });
  }

  /** Deletes what either filter matches; both are required (an empty filter `{}` matches nothing). */
  deleteData(req: DataDeleteRequest, call?: CallOptions): Promise<SnapTokenResponse> {
    return this.#write("data/delete", req, call);
  }

  deleteRelationships(req: RelationshipDeleteRequest, call?: CallOptions): Promise<SnapTokenResponse> {
    return this.#write("relationships/delete", req, call);
  }

  runBundle(name: string, args: Record<string, string> = {}, call?: CallOptions): Promise<SnapTokenResponse> {
    return this.#write("data/run-bundle", { name, arguments: args }, call);
  }

  // ---- bundles ----

  async writeBundles(bundles: DataBundle[], call?: CallOptions): Promise<string[]> {
    const res = await this.#transport.json<{ names: string[] }>(
      "POST",
      this.#tenantPath("bundle/write"),
      { bundles },
      false,
      call,
    );
    return res.names;
  }

  async readBundle(name: string, call?: CallOptions): Promise<BundleReadResponse["bundle"]> {
    return (await this.#read<BundleReadResponse>("bundle/read", { name }, call)).bundle;
  }

  async deleteBundle(name: string, call?: CallOptions): Promise<string> {
    const path = this.#tenantPath("bundle/delete");
    return (await this.#transport.json<{ name: string }>("POST", path, { name }, false, call)).name;
  }

  // ---- schemas ----

  async writeSchema(schema: string, call?: CallOptions): Promise<string> {
    const path = this.#tenantPath("schemas/write");
    return (await this.#transport.json<{ schema_version: string }>("POST", path, { schema }, false, call))
      .schema_version;
  }

  /** Adds, replaces or deletes relations/permissions/attributes of named entities (`partials`). */
  async partialWriteSchema(
    req: WithOptionalMetadata<SchemaPartialWriteRequest>,
    call?: CallOptions,
  ): Promise<string> {
    const body = { ...req, metadata: { schema_version: "", ...req.metadata } };
    const path = this.#tenantPath("schemas/partial-write");
    return (await this.#transport.json<{ schema_version: string }>("PATCH", path, body, false, call))
      .schema_version;
  }

  /** The schema (head, or `metadata.schema_version`) as Permify's SchemaDefinition JSON. */
  async readSchema(
    req: WithOptionalMetadata<SchemaReadRequest> = {},
    call?: CallOptions,
  ): Promise<SchemaReadResponse["schema"]> {
    const body = { metadata: { schema_version: "", ...req.metadata } };
    return (await this.#read<SchemaReadResponse>("schemas/read", body, call)).schema;
  }

  /**
   * Pemba extension (`schemas/diff`): what writing `req.schema` over the head (or `metadata.schema_version`, or the
   * text `base_schema`) would orphan, retype and flip on the stored data. Writes nothing.
   */
  diffSchema(req: SchemaDiffRequest, call?: CallOptions): Promise<SchemaDiffResponse> {
    const metadata = {
      schema_version: req.metadata?.schema_version ?? "",
      snap_token: this.#readToken(req.metadata?.snap_token),
    };
    return this.#read("schemas/diff", { ...req, metadata }, call);
  }

  listSchemas(req: SchemaListRequest = {}, call?: CallOptions): Promise<SchemaListResponse> {
    return this.#read("schemas/list", req, call);
  }

  /** Every schema version, newest first. */
  async *schemas(req: Omit<SchemaListRequest, "continuous_token"> = {}, call?: CallOptions) {
    yield* pages<SchemaVersionInfo>(async (continuous_token) => {
      const page = await this.listSchemas({ ...req, continuous_token }, call);
      return { items: page.schemas, next: page.continuous_token };
    });
  }

  // ---- tenancy (needs an unrestricted key or token) ----

  async createTenant(req: TenantCreateRequest, call?: CallOptions): Promise<Tenant> {
    return (await this.#transport.json<TenantCreateResponse>("POST", "/v1/tenants/create", req, false, call))
      .tenant;
  }

  listTenants(req: TenantListRequest = {}, call?: CallOptions): Promise<TenantListResponse> {
    return this.#transport.json("POST", "/v1/tenants/list", req, true, call);
  }

  async *tenants(req: Omit<TenantListRequest, "continuous_token"> = {}, call?: CallOptions) {
    yield* pages<Tenant>(async (continuous_token) => {
      const page = await this.listTenants({ ...req, continuous_token }, call);
      return { items: page.tenants, next: page.continuous_token };
    });
  }

  /** Deletes a tenant and all its data; answers the deleted id. */
  async deleteTenant(id: string, call?: CallOptions): Promise<string> {
    const path = `/v1/tenants/${encodeURIComponent(id)}`;
    return (await this.#transport.json<{ tenant_id: string }>("DELETE", path, undefined, false, call))
      .tenant_id;
  }

  // ---- watch ----

  /**
   * Every transaction after `snap_token` ("" = from now on), as it commits. Runs until the loop is left or
   * `call.signal` aborts; the timeout covers only the connection.
   */
  async *watch(req: { snap_token?: string } = {}, call?: CallOptions): AsyncGenerator<WatchChanges> {
    const path = this.#tenantPath("watch");
    const res = await this.#transport.stream("POST", path, { snap_token: req.snap_token ?? "" }, call);
    for await (const line of readNdjson<WatchResponse>(res, this.#transport.baseUrl + path)) {
      yield line.changes as WatchChanges;
    }
  }

  // ---- internals ----

  #tenantPath(rest: string): string {
    return `/v1/tenants/${encodeURIComponent(this.tenantId)}/${rest}`;
  }

  #readToken(given: string | undefined): string {
    if (given !== undefined && given !== "") return given;
    return this.#session ? this.#lastWriteToken : "";
  }

  #checkMetadata(given: Partial<PermissionCheckRequestMetadata> | undefined): PermissionCheckRequestMetadata {
    return {
      schema_version: given?.schema_version ?? "",
      snap_token: this.#readToken(given?.snap_token),
      depth: given?.depth ?? this.#depth,
    };
  }

  #read<T>(rest: string, body: unknown, call: CallOptions | undefined): Promise<T> {
    return this.#transport.json<T>("POST", this.#tenantPath(rest), body, true, call);
  }

  async #write(rest: string, body: unknown, call: CallOptions | undefined): Promise<SnapTokenResponse> {
    const res = await this.#transport.json<SnapTokenResponse>(
      "POST",
      this.#tenantPath(rest),
      body,
      false,
      call,
    );
    if (res.snap_token !== "") this.#lastWriteToken = res.snap_token;
    return res;
  }

  #checkNow(req: PermissionCheckRequest, call?: CallOptions): Promise<PermissionCheckResponse> {
    return this.#read("permissions/check", req, call);
  }

  #bulkNow(req: PermissionBulkCheckRequest, call?: CallOptions): Promise<PermissionBulkCheckResponse> {
    return this.#read("permissions/bulk-check", req, call);
  }
}

/** Pages until the server answers an empty continuous token (or the same token twice). */
async function* pages<T>(
  fetchPage: (token: string) => Promise<{ items: T[]; next: string }>,
): AsyncGenerator<T> {
  let token = "";
  for (;;) {
    const page = await fetchPage(token);
    yield* page.items;
    if (page.next === "" || page.next === token) return;
    token = page.next;
  }
}

export type { CheckResult };
