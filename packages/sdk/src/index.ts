/**
 * @pemba/sdk — a fetch-based client for Pemba's (and Permify's) HTTP API. Works in browsers, Node 18+, Workers.
 * Every method maps to one endpoint; request and response shapes are Permify's JSON (snake_case).
 */

export interface Entity {
  type: string;
  id: string;
}
export interface Subject {
  type: string;
  id: string;
  relation?: string;
}
export interface Tuple {
  entity: Entity;
  relation: string;
  subject: Subject;
}
export type AttributeValueInput =
  | { "@type": string; data: unknown }
  | { boolean: boolean }
  | { string: string }
  | { integer: number }
  | { double: number };
export interface AttributeInput {
  entity: Entity;
  attribute: string;
  value: AttributeValueInput;
}
export interface Context {
  tuples?: Tuple[];
  attributes?: AttributeInput[];
  data?: Record<string, unknown>;
}
export interface Metadata {
  schema_version?: string;
  snap_token?: string;
  depth?: number;
}
export type CheckResult = "CHECK_RESULT_ALLOWED" | "CHECK_RESULT_DENIED";

export interface ClientOptions {
  /** e.g. "http://127.0.0.1:3476" */
  baseUrl: string;
  tenantId?: string;
  /** Preshared key or OIDC access token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Default depth for permission calls (Permify requires >= 3). */
  depth?: number;
  fetch?: typeof fetch;
}

/** An error answered by the server: Permify's `{code, message, details}` plus the HTTP status. */
export class PembaApiError extends Error {
  readonly status: number;
  readonly code: number;
  readonly details: unknown[];
  constructor(status: number, body: { code?: number; message?: string; details?: unknown[] }) {
    super(body.message ?? `HTTP ${status}`);
    this.name = "PembaApiError";
    this.status = status;
    this.code = body.code ?? 2;
    this.details = body.details ?? [];
  }
}

export interface PembaClient {
  check(req: {
    entity: Entity;
    permission: string;
    subject: Subject;
    context?: Context;
    metadata?: Metadata;
  }): Promise<{ can: CheckResult; metadata: { check_count: number } }>;
  /** Convenience: true when ALLOWED. */
  can(
    entity: Entity | string,
    permission: string,
    subject: Subject | string,
    context?: Context,
  ): Promise<boolean>;
  bulkCheck(req: {
    items: { entity: Entity; permission: string; subject: Subject }[];
    context?: Context;
    metadata?: Metadata;
  }): Promise<{ results: { can: CheckResult; metadata: { check_count: number } }[] }>;
  lookupEntity(req: {
    entity_type: string;
    permission: string;
    subject: Subject;
    context?: Context;
    scope?: Record<string, { data: string[] }>;
    page_size?: number;
    continuous_token?: string;
    metadata?: Metadata;
  }): Promise<{ entity_ids: string[]; continuous_token: string }>;
  lookupSubject(req: {
    entity: Entity;
    permission: string;
    subject_reference: { type: string; relation?: string };
    context?: Context;
    page_size?: number;
    continuous_token?: string;
    metadata?: Metadata;
  }): Promise<{ subject_ids: string[]; continuous_token: string }>;
  subjectPermission(req: {
    entity: Entity;
    subject: Subject;
    context?: Context;
    metadata?: Metadata & { only_permission?: boolean };
  }): Promise<{ results: Record<string, CheckResult> }>;
  expand(req: {
    entity: Entity;
    permission: string;
    context?: Context;
    metadata?: Metadata;
  }): Promise<{ tree: unknown }>;
  writeSchema(schema: string): Promise<{ schema_version: string }>;
  writeData(req: {
    tuples?: Tuple[];
    attributes?: AttributeInput[];
    metadata?: Metadata;
  }): Promise<{ snap_token: string }>;
  deleteData(req: {
    tuple_filter?: Record<string, unknown>;
    attribute_filter?: Record<string, unknown>;
  }): Promise<{ snap_token: string }>;
  readRelationships(req: {
    filter: Record<string, unknown>;
    page_size?: number;
    continuous_token?: string;
    metadata?: Metadata;
  }): Promise<{ tuples: Tuple[]; continuous_token: string }>;
  /** Any endpoint by path (relative to /v1/tenants/{tenant}/), for what has no method yet. */
  call<T>(path: string, body: unknown): Promise<T>;
}

/** Parses "doc:1" or "group:1#member". */
function toRef(ref: string): Subject {
  const [obj, relation = ""] = ref.split("#");
  const i = obj.indexOf(":");
  if (i <= 0) throw new Error(`expected "type:id", got "${ref}"`);
  return { type: obj.slice(0, i), id: obj.slice(i + 1), relation };
}

export function createClient(opts: ClientOptions): PembaClient {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const tenant = encodeURIComponent(opts.tenantId ?? "t1");
  const depth = opts.depth ?? 20;
  const doFetch = opts.fetch ?? fetch;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;

  async function call<T>(path: string, body: unknown): Promise<T> {
    const res = await doFetch(`${base}/v1/tenants/${tenant}/${path}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      throw new PembaApiError(res.status, { message: text });
    }
    if (!res.ok) throw new PembaApiError(res.status, json as { code?: number; message?: string });
    return json as T;
  }
  const meta = (m?: Metadata) => ({ schema_version: "", snap_token: "", depth, ...m });

  return {
    call,
    check: (r) => call("permissions/check", { ...r, metadata: meta(r.metadata) }),
    async can(entity, permission, subject, context) {
      const e = typeof entity === "string" ? toRef(entity) : entity;
      const s = typeof subject === "string" ? toRef(subject) : subject;
      const res = await call<{ can: CheckResult }>("permissions/check", {
        metadata: meta(),
        entity: { type: e.type, id: e.id },
        permission,
        subject: s,
        context,
      });
      return res.can === "CHECK_RESULT_ALLOWED";
    },
    bulkCheck: (r) => call("permissions/bulk-check", { ...r, metadata: meta(r.metadata) }),
    lookupEntity: (r) => call("permissions/lookup-entity", { ...r, metadata: meta(r.metadata) }),
    lookupSubject: (r) => call("permissions/lookup-subject", { ...r, metadata: meta(r.metadata) }),
    subjectPermission: (r) => call("permissions/subject-permission", { ...r, metadata: meta(r.metadata) }),
    expand: (r) =>
      call("permissions/expand", { ...r, metadata: { schema_version: "", snap_token: "", ...r.metadata } }),
    writeSchema: (schema) => call("schemas/write", { schema }),
    writeData: (r) => call("data/write", { ...r, metadata: { schema_version: "", ...r.metadata } }),
    deleteData: (r) => call("data/delete", r),
    readRelationships: (r) =>
      call("data/relationships/read", { ...r, metadata: { snap_token: "", ...r.metadata } }),
  };
}
