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
import { assertDeclaredWithinLimit, readStreamText, requestTooLarge } from "./request-body.ts";
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
  off(event: "data", listener: (chunk: Uint8Array) => void): unknown;
}

export interface NodeResponseLike {
  /** `headers` as a flat [name, value, ...] list (node:http takes it without walking an object's keys). */
  writeHead(status: number, headers: string[]): unknown;
  end(body: string): unknown;
}

/**
 * Called after a check's response was handed to node:http (for logging): status, body, and the milliseconds from
 * the request's headers to the answer.
 */
export type NodeCheckAnswered = (status: number, body: string, ms: number) => void;

export interface FastCheckDeps {
  service: PembaService;
  limits: Limits;
  auth: Authenticator | undefined;
  cors: CorsPolicy;
  observe: Observe | undefined;
}

const INTERNAL_ERROR = '{"code":13,"message":"internal error","details":[]}';
const CONTENT_TYPE = JSON_HEADERS["content-type"];

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

/**
 * One check request in flight. The endpoint's steps are methods, so a request allocates this object (and, on
 * node:http, the two body listeners) instead of a closure per step. Subclasses are the transports: header lookup,
 * body reading, handing over the answer. The answer is sent exactly once.
 * Order as on the routed endpoint: authentication, tenant id, tenant access, declared size, body, check.
 */
abstract class CheckExchange {
  #sent = false;
  readonly deps: FastCheckDeps;
  readonly tenantId: string;
  /** performance.now() when the request's headers were read. */
  readonly started: number;

  constructor(deps: FastCheckDeps, tenantId: string) {
    this.deps = deps;
    this.tenantId = tenantId;
    this.started = performance.now();
  }

  abstract header(name: string): string | undefined;
  /** Reads the body as text, then calls `check(text)` (or `fail(error)`). */
  abstract readBody(): void;
  /** `headers` as [name, value, ...]. */
  abstract finish(status: number, body: string, headers: string[]): void;
  /** Does `finish` need a content-length header? */
  abstract readonly contentLength: boolean;

  start(): void {
    try {
      this.deps.cors.admit(this.header("origin"), this.header("host"));
    } catch (e) {
      this.fail(e);
      return;
    }
    const auth = this.deps.auth;
    if (auth === undefined) {
      this.authenticated(UNRESTRICTED);
      return;
    }
    let principal: Principal | Promise<Principal>;
    try {
      principal = auth.authenticate(this.header("authorization"));
    } catch (e) {
      this.fail(e);
      return;
    }
    if (isThenable(principal))
      principal.then(
        (p) => this.authenticated(p),
        (e: unknown) => this.fail(e),
      );
    else this.authenticated(principal);
  }

  authenticated(principal: Principal): void {
    try {
      validateTenantId("PermissionCheckRequest", this.tenantId);
      assertTenantAllowed(principal, this.tenantId);
      assertDeclaredWithinLimit(this.header("content-length"), this.deps.limits.maxBodyBytes);
    } catch (e) {
      this.fail(e);
      return;
    }
    this.readBody();
  }

  check(text: string): void {
    try {
      const outcome = checkFromText(this.deps.service, this.deps.limits, this.tenantId, text);
      if (isThenable(outcome))
        outcome.then(
          (o) => this.allowed(o),
          (e: unknown) => this.fail(e),
        );
      else this.allowed(outcome);
    } catch (e) {
      this.fail(e);
    }
  }

  allowed(outcome: CheckOutcome): void {
    this.send(200, checkResponseText(outcome), outcome.can, true);
  }

  fail(e: unknown): void {
    const parts = errorResponseParts(e);
    this.send(parts.status, JSON.stringify(parts.body), undefined, false);
  }

  /**
   * [name, value, ...]: the content type, the CORS headers for `origin`, then the content length when the transport
   * needs one (`ascii`: the body is known to be ASCII, so its length is its byte length).
   */
  #headers(body: string, ascii: boolean, origin: string | undefined): string[] {
    const headers = ["content-type", CONTENT_TYPE];
    if (origin !== undefined) headers.push(...this.deps.cors.headersFor(origin));
    if (this.contentLength) headers.push("content-length", String(ascii ? body.length : utf8Length(body)));
    return headers;
  }

  /** `ascii`: the body is known to be ASCII (a decision), so its length is its byte length. */
  send(status: number, body: string, decision: string | undefined, ascii: boolean): void {
    if (this.#sent) return;
    this.#sent = true;
    let headers: string[];
    try {
      headers = this.#headers(body, ascii, this.header("origin"));
    } catch {
      // A failing CORS policy: answer like any unexpected error rather than leave the request open.
      status = 500;
      body = INTERNAL_ERROR;
      decision = undefined;
      headers = this.#headers(body, true, undefined);
    }
    this.finish(status, body, headers);
    // The hook runs after the answer is handed over (bookkeeping does not delay the response).
    const observe = this.deps.observe;
    if (observe !== undefined) {
      try {
        observe({
          route: CHECK_ROUTE,
          status,
          seconds: (performance.now() - this.started) / 1000,
          decision,
        });
      } catch {
        // a failing metrics hook cannot change an answer already sent
      }
    }
  }
}

/** A check on node:http's (req, res): headers from rawHeaders, the body from the stream, a Content-Length. */
class NodeCheck extends CheckExchange {
  readonly req: NodeRequestLike;
  readonly res: NodeResponseLike;
  readonly answered: NodeCheckAnswered | undefined;
  readonly contentLength = true;
  /** The body was cut off at the size limit: answer with `Connection: close` instead of reading the rest. */
  closeAfterAnswer = false;

  constructor(
    deps: FastCheckDeps,
    tenantId: string,
    req: NodeRequestLike,
    res: NodeResponseLike,
    answered: NodeCheckAnswered | undefined,
  ) {
    super(deps, tenantId);
    this.req = req;
    this.res = res;
    this.answered = answered;
  }

  header(name: string): string | undefined {
    return rawHeader(this.req.rawHeaders, name);
  }

  /**
   * One decode for the usual single chunk, a streaming decode otherwise. The size limit is enforced while reading:
   * once more than the limit has arrived, the request is answered 413 and the connection closed (the rest of the
   * body is never read).
   */
  readBody(): void {
    const max = this.deps.limits.maxBodyBytes;
    let first: Uint8Array | undefined;
    let decoder: InstanceType<typeof TextDecoder> | undefined;
    let text = "";
    let bytes = 0;
    const onData = (chunk: Uint8Array) => {
      bytes += chunk.byteLength;
      if (bytes > max) {
        this.req.off("data", onData);
        this.closeAfterAnswer = true;
        this.fail(requestTooLarge());
        return;
      }
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
    };
    this.req.on("data", onData);
    this.req.on("end", () => {
      if (bytes > max) return;
      if (decoder !== undefined) this.check(text + decoder.decode());
      else this.check(first === undefined ? "" : utf8.decode(first));
    });
    // No "error" listener: an aborted request (the only error of an IncomingMessage) is not emitted without one,
    // and there is nobody left to answer.
  }

  finish(status: number, body: string, headers: string[]): void {
    if (this.closeAfterAnswer) headers.push("connection", "close");
    this.res.writeHead(status, headers);
    this.res.end(body);
    this.answered?.(status, body, performance.now() - this.started);
  }
}

type NodeHeaders = Record<string, string | string[] | undefined>;

/** A check through `app.fetch`: headers from Node's IncomingMessage when there is one, else from the Request. */
class FetchCheck extends CheckExchange {
  readonly request: Request;
  readonly nodeHeaders: NodeHeaders | undefined;
  readonly resolve: (response: Response) => void;
  readonly contentLength = false;

  constructor(
    deps: FastCheckDeps,
    tenantId: string,
    request: Request,
    env: unknown,
    resolve: (r: Response) => void,
  ) {
    super(deps, tenantId);
    this.request = request;
    this.nodeHeaders = (env as { incoming?: { headers?: NodeHeaders } } | undefined)?.incoming?.headers;
    this.resolve = resolve;
  }

  header(name: string): string | undefined {
    if (this.nodeHeaders === undefined) return this.request.headers.get(name) ?? undefined;
    const v = this.nodeHeaders[name];
    return Array.isArray(v) ? v.join(", ") : v;
  }

  readBody(): void {
    readStreamText(this.request.body, this.deps.limits.maxBodyBytes).then(
      (text) => this.check(text),
      (e: unknown) => this.fail(e),
    );
  }

  finish(status: number, body: string, headers: string[]): void {
    const record: Record<string, string> = {};
    for (let i = 0; i < headers.length; i += 2) record[headers[i]!] = headers[i + 1]!;
    this.resolve(new Response(body, { status, headers: record }));
  }
}

export function createFastCheck(deps: FastCheckDeps) {
  /** For `app.fetch`: a response promise for a check request; undefined for anything else. */
  const fetch = (request: Request, env: unknown): Promise<Response> | undefined => {
    if (request.method !== "POST") return undefined;
    const tenantId = checkPathTenant(request.url);
    if (tenantId === undefined) return undefined;
    return new Promise((resolve) => new FetchCheck(deps, tenantId, request, env, resolve).start());
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
    new NodeCheck(deps, tenantId, req, res, answered).start();
    return true;
  };

  return { fetch, node };
}
