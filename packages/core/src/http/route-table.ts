/**
 * The route table: each API endpoint once, with its method, path template, operation id and what the request
 * pipeline needs to know of it. Hono registers its routes from it (route.ts), the node:http adapter asks
 * `matchRoute` which route a URL is, and log lines and metrics are labelled with its templates (`endpoint.route`).
 */
import type { Endpoint } from "./pipeline.ts";

export type ApiMethod = "GET" | "POST" | "PATCH" | "DELETE";

export interface ApiRoute {
  readonly method: ApiMethod;
  /** OpenAPI form: `/v1/tenants/{tenant_id}/permissions/check`. */
  readonly path: string;
  readonly operationId: string;
  /** The pipeline's view; `endpoint.route` (`/v1/tenants/:tenant_id/permissions/check`) is the label. */
  readonly endpoint: Endpoint;
  /** A write whose body size counts towards the Node server's heap compaction. */
  readonly write: boolean;
  /**
   * An AuthZEN route at the root paths (`/access/v1/...`): served only with `--authzen-tenant`, whose tenant it
   * answers for.
   */
  readonly authzenRoot: boolean;
}

interface RouteFlags {
  /** Needs an unrestricted key or token. */
  tenancy?: boolean;
  /** NDJSON answer. */
  stream?: boolean;
  write?: boolean;
  /** An endpoint of the AuthZEN Authorization API (its error statuses, X-Request-ID). */
  authzen?: boolean;
}

function api(
  method: ApiMethod,
  path: string,
  operationId: string,
  requestMessage: string,
  flags: RouteFlags = {},
): ApiRoute {
  return {
    method,
    path,
    operationId,
    write: flags.write === true,
    authzenRoot: flags.authzen === true && !path.includes("{tenant_id}"),
    endpoint: {
      route: path.replace(/\{(\w+)\}/g, ":$1"),
      authenticate: true,
      tenantParam: path.includes("{tenant_id}") ? "tenant_id" : undefined,
      tenancy: flags.tenancy,
      requestMessage,
      stream: flags.stream,
      authzen: flags.authzen,
    },
  };
}

const T = "/v1/tenants/{tenant_id}";
const WRITE = { write: true };
const AUTHZEN = { authzen: true };
/** The AuthZEN Authorization API 1.0 under a prefix: a tenant's (`/v1/tenants/{tenant_id}`) or the root. */
const authzenRoutes = (prefix: string, op: string) => ({
  evaluation: api(
    "POST",
    `${prefix}/access/v1/evaluation`,
    `${op}.evaluation`,
    "AccessEvaluationRequest",
    AUTHZEN,
  ),
  evaluations: api(
    "POST",
    `${prefix}/access/v1/evaluations`,
    `${op}.evaluations`,
    "AccessEvaluationsRequest",
    AUTHZEN,
  ),
  searchSubject: api(
    "POST",
    `${prefix}/access/v1/search/subject`,
    `${op}.search.subject`,
    "SubjectSearchRequest",
    AUTHZEN,
  ),
  searchResource: api(
    "POST",
    `${prefix}/access/v1/search/resource`,
    `${op}.search.resource`,
    "ResourceSearchRequest",
    AUTHZEN,
  ),
  searchAction: api(
    "POST",
    `${prefix}/access/v1/search/action`,
    `${op}.search.action`,
    "ActionSearchRequest",
    AUTHZEN,
  ),
  configuration: api(
    "GET",
    `${prefix}/.well-known/authzen-configuration`,
    `${op}.configuration`,
    "AuthzenConfigurationRequest",
    AUTHZEN,
  ),
});

/** A tenant's AuthZEN decision point, under the tenant's path. */
export const AUTHZEN_ROUTES = {
  ...authzenRoutes(T, "authzen"),
  /** The RFC 8615 form of the discovery URL for the tenant's decision point identifier (its base URL). */
  configurationWellKnown: api(
    "GET",
    "/.well-known/authzen-configuration/v1/tenants/{tenant_id}",
    "authzen.configuration.well-known",
    "AuthzenConfigurationRequest",
    AUTHZEN,
  ),
} as const satisfies Record<string, ApiRoute>;

/** The same decision point at the root paths, for the tenant `--authzen-tenant` names. */
export const AUTHZEN_ROOT_ROUTES = authzenRoutes("", "authzen.root") satisfies Record<string, ApiRoute>;

export const ROUTES = {
  tenantsCreate: api("POST", "/v1/tenants/create", "tenants.create", "TenantCreateRequest", {
    tenancy: true,
  }),
  tenantsList: api("POST", "/v1/tenants/list", "tenants.list", "TenantListRequest", { tenancy: true }),
  tenantsDelete: api("DELETE", "/v1/tenants/{id}", "tenants.delete", "TenantDeleteRequest", {
    tenancy: true,
  }),
  // schema writes are small (MAX_SCHEMA_BYTES) and not bulk loads: a stream of them must not trigger the full
  // collections of the heap compaction, which stall every tenant
  schemasWrite: api("POST", `${T}/schemas/write`, "schemas.write", "SchemaWriteRequest"),
  schemasPartialWrite: api(
    "PATCH",
    `${T}/schemas/partial-write`,
    "schemas.partial-write",
    "SchemaPartialWriteRequest",
  ),
  schemasRead: api("POST", `${T}/schemas/read`, "schemas.read", "SchemaReadRequest"),
  schemasList: api("POST", `${T}/schemas/list`, "schemas.list", "SchemaListRequest"),
  /** Pemba extension: what writing a schema would orphan and which decisions it would flip. */
  schemasDiff: api("POST", `${T}/schemas/diff`, "schemas.diff", "SchemaDiffRequest"),
  dataWrite: api("POST", `${T}/data/write`, "data.write", "DataWriteRequest", WRITE),
  relationshipsWrite: api(
    "POST",
    `${T}/relationships/write`,
    "relationships.write",
    "RelationshipWriteRequest",
    WRITE,
  ),
  relationshipsRead: api(
    "POST",
    `${T}/data/relationships/read`,
    "data.relationships.read",
    "RelationshipReadRequest",
  ),
  attributesRead: api("POST", `${T}/data/attributes/read`, "data.attributes.read", "AttributeReadRequest"),
  dataDelete: api("POST", `${T}/data/delete`, "data.delete", "DataDeleteRequest", WRITE),
  relationshipsDelete: api(
    "POST",
    `${T}/relationships/delete`,
    "relationships.delete",
    "RelationshipDeleteRequest",
    WRITE,
  ),
  bundleRun: api("POST", `${T}/data/run-bundle`, "bundle.run", "BundleRunRequest", WRITE),
  bundleWrite: api("POST", `${T}/bundle/write`, "bundle.write", "BundleWriteRequest", WRITE),
  bundleRead: api("POST", `${T}/bundle/read`, "bundle.read", "BundleReadRequest"),
  bundleDelete: api("POST", `${T}/bundle/delete`, "bundle.delete", "BundleDeleteRequest", WRITE),
  check: api("POST", `${T}/permissions/check`, "permissions.check", "PermissionCheckRequest"),
  bulkCheck: api(
    "POST",
    `${T}/permissions/bulk-check`,
    "permissions.bulk-check",
    "PermissionBulkCheckRequest",
  ),
  expand: api("POST", `${T}/permissions/expand`, "permissions.expand", "PermissionExpandRequest"),
  lookupEntity: api(
    "POST",
    `${T}/permissions/lookup-entity`,
    "permissions.lookupEntity",
    "PermissionLookupEntityRequest",
  ),
  lookupEntityStream: api(
    "POST",
    `${T}/permissions/lookup-entity-stream`,
    "permissions.lookupEntityStream",
    "PermissionLookupEntityRequest",
    { stream: true },
  ),
  lookupSubject: api(
    "POST",
    `${T}/permissions/lookup-subject`,
    "permissions.lookupSubject",
    "PermissionLookupSubjectRequest",
  ),
  subjectPermission: api(
    "POST",
    `${T}/permissions/subject-permission`,
    "permissions.subjectPermission",
    "PermissionSubjectPermissionRequest",
  ),
  /** Pemba's extension (Permify has none): the check body, answered with the decision and its proof. */
  explain: api("POST", `${T}/permissions/explain`, "permissions.explain", "PermissionCheckRequest"),
  watch: api("POST", `${T}/watch`, "watch.watch", "WatchRequest", { stream: true }),
  /** Pemba extension: a chunk of a tenant dump's lines (docs/DUMP.md), resumable by line offset. */
  dataImport: api("POST", `${T}/data/import`, "data.import", "DataImportRequest", WRITE),
  /** Pemba extension: the tenant's dump at one snap, streamed. */
  dataExport: api("POST", `${T}/data/export`, "data.export", "DataExportRequest", { stream: true }),
} as const satisfies Record<string, ApiRoute>;

export const ROUTE_LIST: readonly ApiRoute[] = [
  ...Object.values(ROUTES),
  ...Object.values(AUTHZEN_ROUTES),
  ...Object.values(AUTHZEN_ROOT_ROUTES),
];

/** A route of the table and its path parameters, as they stand in the URL (percent-encoded). */
export interface RouteMatch {
  route: ApiRoute;
  params: Record<string, string>;
}

/** A trie of path segments: fixed segments first, then a parameter (a non-empty segment). */
interface Segment {
  fixed: Map<string, Segment>;
  param?: Segment;
  byMethod: Map<string, ApiRoute>;
}

const segment = (): Segment => ({ fixed: new Map(), byMethod: new Map() });
const PARAM = /^\{(\w+)\}$/;
/** Each route's parameter names, in path order. */
const PARAM_NAMES = new Map<ApiRoute, string[]>();

const ROOT = segment();
for (const route of ROUTE_LIST) {
  const names: string[] = [];
  let at = ROOT;
  for (const part of route.path.split("/").slice(1)) {
    const param = PARAM.exec(part)?.[1];
    if (param === undefined) {
      const next = at.fixed.get(part) ?? segment();
      at.fixed.set(part, next);
      at = next;
    } else {
      names.push(param);
      at = at.param ??= segment();
    }
  }
  at.byMethod.set(route.method, route);
  PARAM_NAMES.set(route, names);
}

function walk(
  at: Segment,
  parts: string[],
  i: number,
  method: string,
  values: string[],
): ApiRoute | undefined {
  if (i === parts.length) return at.byMethod.get(method);
  const part = parts[i]!;
  const fixed = at.fixed.get(part);
  const found = fixed === undefined ? undefined : walk(fixed, parts, i + 1, method, values);
  if (found !== undefined || at.param === undefined || part === "") return found;
  values.push(part);
  const viaParam = walk(at.param, parts, i + 1, method, values);
  if (viaParam === undefined) values.pop();
  return viaParam;
}

/**
 * The table's route for `method` and `url` (a path, with or without a query), as Hono matches it; undefined for
 * anything else (metadata paths, unknown paths, another method of a known path).
 */
export function matchRoute(method: string, url: string): RouteMatch | undefined {
  const query = url.indexOf("?");
  const path = query < 0 ? url : url.slice(0, query);
  if (!path.startsWith("/")) return undefined;
  const values: string[] = [];
  const route = walk(ROOT, path.split("/"), 1, method, values);
  if (route === undefined) return undefined;
  const params: Record<string, string> = {};
  PARAM_NAMES.get(route)!.forEach((name, i) => {
    params[name] = values[i]!;
  });
  return { route, params };
}
