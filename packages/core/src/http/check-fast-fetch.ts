/**
 * The check endpoint without the router: `createApp` puts this in front of Hono's `fetch`, so the most frequent
 * request skips routing and context creation. It answers exactly like the routed endpoint (same validation,
 * errors, auth, CORS and observe hook); anything that is not `POST /v1/tenants/<t>/permissions/check` returns
 * undefined and goes to Hono. On Node (@hono/node-server, which passes `{ incoming }` as env) headers are read from
 * the IncomingMessage, so the Request's Headers object is never built.
 */

import type { PembaService } from "../service/index.ts";
import type { Authenticator } from "./auth/index.ts";
import { assertTenantAllowed, UNRESTRICTED } from "./auth/index.ts";
import type { CorsPolicy } from "./cors.ts";
import { errorResponseParts, JSON_HEADERS } from "./error-response.ts";
import type { Limits } from "./limits.ts";
import { parseJsonBody, requestTooLarge } from "./request-body.ts";
import { type Observe, validateTenantId } from "./route.ts";
import { checkFromBody, checkResponseText } from "./routes/permission.ts";

export const CHECK_ROUTE = "/v1/tenants/:tenant_id/permissions/check";
const PREFIX = "/v1/tenants/";
const SUFFIX = "/permissions/check";

/** The tenant id of a check URL, or undefined for any other URL. */
export function checkPathTenant(url: string): string | undefined {
  const start = url.charCodeAt(0) === 47 /* "/" */ ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0 || !url.startsWith(PREFIX, start)) return undefined;
  let end = url.indexOf("?", start);
  if (end < 0) end = url.length;
  if (end - start <= PREFIX.length + SUFFIX.length || !url.startsWith(SUFFIX, end - SUFFIX.length))
    return undefined;
  const raw = url.slice(start + PREFIX.length, end - SUFFIX.length);
  if (raw.includes("/")) return undefined;
  if (!raw.includes("%")) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

type NodeHeaders = Record<string, string | string[] | undefined>;

function incomingHeaders(env: unknown): NodeHeaders | undefined {
  const incoming = (env as { incoming?: { headers?: NodeHeaders } } | undefined)?.incoming;
  return incoming?.headers;
}

const nodeHeader = (headers: NodeHeaders, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
};

/** The parts of node:http's IncomingMessage / ServerResponse the Node check path uses (no node imports here). */
export interface NodeRequestLike {
  method?: string;
  url?: string;
  headers: NodeHeaders;
  setEncoding(encoding: "utf8"): unknown;
  on(event: "data", listener: (chunk: string) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  on(event: "error", listener: (error: unknown) => void): unknown;
}

export interface NodeResponseLike {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
}

export interface FastCheckDeps {
  service: PembaService;
  limits: Limits;
  auth: Authenticator | undefined;
  cors: CorsPolicy;
  observe: Observe | undefined;
}

interface CheckAnswer {
  status: number;
  body: string;
  headers: Record<string, string>;
}

export function createFastCheck(deps: FastCheckDeps) {
  const { service, limits, auth, cors, observe } = deps;

  /** The whole endpoint on plain values: header lookup + body text in, status/body/headers out. */
  async function answer(
    header: (name: string) => string | undefined,
    readBody: () => Promise<string>,
    tenantId: string,
  ): Promise<CheckAnswer> {
    const start = observe === undefined ? 0 : performance.now();
    let decision: string | undefined;
    let status = 200;
    let body: string;
    try {
      const principal = auth === undefined ? UNRESTRICTED : await auth.authenticate(header("authorization"));
      validateTenantId("PermissionCheckRequest", tenantId);
      assertTenantAllowed(principal, tenantId);
      const declared = header("content-length");
      if (declared !== undefined && Number(declared) > limits.maxBodyBytes) throw requestTooLarge();
      const outcome = await checkFromBody(
        service,
        limits,
        tenantId,
        parseJsonBody(await readBody(), limits.maxBodyBytes),
      );
      decision = outcome.can;
      body = checkResponseText(outcome);
    } catch (e) {
      const parts = errorResponseParts(e);
      status = parts.status;
      body = JSON.stringify(parts.body);
    }
    let headers: Record<string, string> = JSON_HEADERS;
    const origin = header("origin");
    if (origin !== undefined && cors.allows(origin))
      headers = { ...JSON_HEADERS, ...cors.headersFor(origin) };
    if (observe !== undefined) {
      observe({ route: CHECK_ROUTE, status, seconds: (performance.now() - start) / 1000, decision });
    }
    return { status, body, headers };
  }

  async function fetchCheck(request: Request, env: unknown, tenantId: string): Promise<Response> {
    const nodeHeaders = incomingHeaders(env);
    const header =
      nodeHeaders === undefined
        ? (name: string) => request.headers.get(name) ?? undefined
        : (name: string) => nodeHeader(nodeHeaders, name);
    const a = await answer(header, () => request.text(), tenantId);
    return new Response(a.body, { status: a.status, headers: a.headers });
  }

  /** For `app.fetch`: a response promise for a check request; undefined for anything else. */
  const fetch = (request: Request, env: unknown): Promise<Response> | undefined => {
    if (request.method !== "POST") return undefined;
    const tenantId = checkPathTenant(request.url);
    return tenantId === undefined ? undefined : fetchCheck(request, env, tenantId);
  };

  /**
   * For a node:http server: answers a check request straight on (req, res), without building a Request or a
   * Response (the cheapest path on Node); returns false for anything else, which the caller hands to Hono.
   */
  const node = (req: NodeRequestLike, res: NodeResponseLike): boolean => {
    if (req.method !== "POST" || req.url === undefined) return false;
    const tenantId = checkPathTenant(req.url);
    if (tenantId === undefined) return false;
    const readBody = () =>
      new Promise<string>((resolve, reject) => {
        let text = "";
        req.setEncoding("utf8");
        req.on("data", (chunk) => {
          text += chunk;
        });
        req.on("end", () => resolve(text));
        req.on("error", reject);
      });
    void answer((name) => nodeHeader(req.headers, name), readBody, tenantId).then(
      (a) => {
        res.writeHead(a.status, a.headers);
        res.end(a.body);
      },
      () => {
        res.writeHead(500, JSON_HEADERS);
        res.end('{"code":13,"message":"internal error","details":[]}');
      },
    );
    return true;
  };

  return { fetch, node };
}
