/**
 * The check endpoint without the router: `createApp` puts this in front of Hono's `fetch`, so the most frequent
 * request skips routing and context creation. It answers exactly like the routed endpoint (same validation,
 * errors, auth, CORS and observe hook); anything that is not `POST /v1/tenants/<t>/permissions/check` returns
 * undefined and goes to Hono. On Node (@hono/node-server, which passes `{ incoming }` as env) headers are read from
 * the IncomingMessage, so the Request's Headers object is never built.
 *
 * The endpoint runs on callbacks, not async functions: with the schema cached and a synchronous store, a check is
 * answered in the request's `end` event with no promise or microtask in between.
 */

import type { CheckOutcome } from "../engine/types.ts";
import type { PembaService } from "../service/index.ts";
import type { Authenticator, Principal } from "./auth/index.ts";
import { assertTenantAllowed, UNRESTRICTED } from "./auth/index.ts";
import type { CorsPolicy } from "./cors.ts";
import { errorResponseParts, JSON_HEADERS } from "./error-response.ts";
import type { Limits } from "./limits.ts";
import { assertDeclaredWithinLimit } from "./request-body.ts";
import { type Observe, validateTenantId } from "./route.ts";
import { checkFromText, checkResponseText } from "./routes/permission.ts";

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

/** Does the raw header name `raw` equal the lower-case `name` (letters and "-"), ignoring case? */
function sameHeaderName(raw: string, name: string): boolean {
  if (raw.length !== name.length) return false;
  for (let i = 0; i < name.length; i++) {
    // lower-cases ASCII letters; "-" has the bit set already, and no other token character maps onto these
    if ((raw.charCodeAt(i) | 0x20) !== name.charCodeAt(i)) return false;
  }
  return true;
}

/** Headers node:http keeps only the first of (IncomingMessage.headers drops repeats); others are joined. */
const SINGLE_HEADERS = new Set(["authorization", "content-length", "content-type", "host", "user-agent"]);

/**
 * One header from node:http's rawHeaders ([name, value, ...]) with IncomingMessage.headers' value for it, without
 * building that object (the `headers` getter builds it from rawHeaders on first use, for every header).
 * `name` must be lower case, letters and "-" only.
 */
export function rawHeader(raw: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!sameHeaderName(raw[i]!, name)) continue;
    if (value === undefined) {
      value = raw[i + 1]!;
      if (SINGLE_HEADERS.has(name)) return value;
    } else value += `, ${raw[i + 1]}`;
  }
  return value;
}

/** The parts of node:http's IncomingMessage / ServerResponse the Node check path uses (no node imports here). */
export interface NodeRequestLike {
  method?: string;
  url?: string;
  /** [name, value, ...] as received */
  rawHeaders: string[];
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "end", listener: () => void): unknown;
}

export interface NodeResponseLike {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
}

/** Called after a check's response was handed to node:http (for logging). */
export type NodeCheckAnswered = (status: number, body: string) => void;

export interface FastCheckDeps {
  service: PembaService;
  limits: Limits;
  auth: Authenticator | undefined;
  cors: CorsPolicy;
  observe: Observe | undefined;
}

type Finish = (status: number, body: string, headers: Record<string, string>) => void;
type ReadBody = (done: (text: string) => void, fail: (error: unknown) => void) => void;

const INTERNAL_ERROR = '{"code":13,"message":"internal error","details":[]}';

const isThenable = <T>(v: T | PromiseLike<T>): v is PromiseLike<T> =>
  typeof (v as { then?: unknown } | null)?.then === "function";

/** UTF-8 byte length of a string (as Buffer.byteLength; lone surrogates count as U+FFFD, 3 bytes). */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2; // 4 bytes for 2 UTF-16 units
        i++;
      } else bytes += 2;
    } else bytes += 2;
  }
  return bytes;
}

/** Decodes a body without a BOM strip (like Node's StringDecoder): a leading BOM stays and fails JSON.parse. */
const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });

/** node:http's request body as text: one decode for the usual single chunk, a streaming decode otherwise. */
function readNodeBody(req: NodeRequestLike): ReadBody {
  return (done) => {
    let first: Uint8Array | undefined;
    let decoder: InstanceType<typeof TextDecoder> | undefined;
    let text = "";
    req.on("data", (chunk) => {
      if (first === undefined && decoder === undefined) {
        first = chunk;
        return;
      }
      if (decoder === undefined) {
        decoder = new TextDecoder("utf-8", { ignoreBOM: true });
        text = decoder.decode(first, { stream: true });
        first = undefined;
      }
      text += decoder.decode(chunk, { stream: true });
    });
    req.on("end", () => {
      if (decoder !== undefined) done(text + decoder.decode());
      else done(first === undefined ? "" : utf8.decode(first));
    });
    // No "error" listener: an aborted request (the only error of an IncomingMessage) is not emitted without one,
    // and there is nobody left to answer.
  };
}

export function createFastCheck(deps: FastCheckDeps) {
  const { service, limits, auth, cors, observe } = deps;
  const maxBytes = limits.maxBodyBytes;

  /**
   * The whole endpoint on plain values: header lookup + body reader in, status/body/headers out (exactly once).
   * Order as on the routed endpoint: authentication, tenant id, tenant access, declared size, body, check.
   */
  function answer(
    header: (name: string) => string | undefined,
    readBody: ReadBody,
    tenantId: string,
    contentLength: boolean,
    finish: Finish,
  ): void {
    const start = observe === undefined ? 0 : performance.now();
    let sent = false;
    /** `ascii`: the body is known to be ASCII (a decision), so its length is its byte length. */
    const send = (status: number, body: string, decision: string | undefined, ascii = false) => {
      if (sent) return;
      sent = true;
      let headers: Record<string, string>;
      try {
        const origin = header("origin");
        headers =
          origin !== undefined && cors.allows(origin)
            ? { ...JSON_HEADERS, ...cors.headersFor(origin) }
            : contentLength
              ? { "content-type": JSON_HEADERS["content-type"] }
              : JSON_HEADERS;
        if (contentLength) headers["content-length"] = String(ascii ? body.length : utf8Length(body));
      } catch {
        // A failing CORS policy: answer like any unexpected error rather than leave the request open.
        status = 500;
        body = INTERNAL_ERROR;
        decision = undefined;
        headers = contentLength
          ? { ...JSON_HEADERS, "content-length": String(body.length) }
          : { ...JSON_HEADERS };
      }
      const seconds = observe === undefined ? 0 : (performance.now() - start) / 1000;
      finish(status, body, headers);
      // The hook runs after the answer is handed over (bookkeeping does not delay the response).
      if (observe !== undefined) {
        try {
          observe({ route: CHECK_ROUTE, status, seconds, decision });
        } catch {
          // a failing metrics hook cannot change an answer already sent
        }
      }
    };
    const fail = (e: unknown) => {
      const parts = errorResponseParts(e);
      send(parts.status, JSON.stringify(parts.body), undefined);
    };
    const allowed = (outcome: CheckOutcome) => send(200, checkResponseText(outcome), outcome.can, true);
    const check = (text: string) => {
      try {
        const outcome = checkFromText(service, limits, tenantId, text);
        if (isThenable(outcome)) outcome.then(allowed, fail);
        else allowed(outcome);
      } catch (e) {
        fail(e);
      }
    };
    const authenticated = (principal: Principal) => {
      try {
        validateTenantId("PermissionCheckRequest", tenantId);
        assertTenantAllowed(principal, tenantId);
        assertDeclaredWithinLimit(header("content-length"), maxBytes);
      } catch (e) {
        fail(e);
        return;
      }
      readBody(check, fail);
    };
    if (auth === undefined) {
      authenticated(UNRESTRICTED);
      return;
    }
    let principal: Principal | Promise<Principal>;
    try {
      principal = auth.authenticate(header("authorization"));
    } catch (e) {
      fail(e);
      return;
    }
    if (isThenable(principal)) principal.then(authenticated, fail);
    else authenticated(principal);
  }

  function fetchCheck(request: Request, env: unknown, tenantId: string): Promise<Response> {
    const nodeHeaders = incomingHeaders(env);
    const header =
      nodeHeaders === undefined
        ? (name: string) => request.headers.get(name) ?? undefined
        : (name: string) => nodeHeader(nodeHeaders, name);
    const readBody: ReadBody = (done, fail) => {
      request.text().then(done, fail);
    };
    return new Promise((resolve) =>
      answer(header, readBody, tenantId, false, (status, body, headers) =>
        resolve(new Response(body, { status, headers })),
      ),
    );
  }

  /** For `app.fetch`: a response promise for a check request; undefined for anything else. */
  const fetch = (request: Request, env: unknown): Promise<Response> | undefined => {
    if (request.method !== "POST") return undefined;
    const tenantId = checkPathTenant(request.url);
    return tenantId === undefined ? undefined : fetchCheck(request, env, tenantId);
  };

  /**
   * For a node:http server: answers a check request straight on (req, res), without building a Request or a
   * Response (the cheapest path on Node), with a Content-Length (no chunked encoding: one socket write), then calls
   * `answered`; returns false for anything else, which the caller hands to Hono.
   */
  const node = (req: NodeRequestLike, res: NodeResponseLike, answered?: NodeCheckAnswered): boolean => {
    if (req.method !== "POST" || req.url === undefined) return false;
    const tenantId = checkPathTenant(req.url);
    if (tenantId === undefined) return false;
    const raw = req.rawHeaders;
    answer(
      (name) => rawHeader(raw, name),
      readNodeBody(req),
      tenantId,
      true,
      (status, body, responseHeaders) => {
        res.writeHead(status, responseHeaders);
        res.end(body);
        answered?.(status, body);
      },
    );
    return true;
  };

  return { fetch, node };
}
