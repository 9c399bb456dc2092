/**
 * The one request pipeline of the HTTP API, transport-free: every endpoint (the check included) runs through
 * `RequestPipeline.run`, whatever carries the request. The fetch adapter (Hono's routes, in route.ts) and the
 * node:http adapter (packages/node-server) only translate a request into an `ApiRequest` and an `Answer` back.
 *
 * Order: origin check (CORS), authentication, tenancy rights, tenant id, tenant access, then the handler (behind
 * FetchRoutes' reading of the body under the size limit, validated with the route's wire schema). Any error becomes Permify's
 * error body; CORS headers are added; the observe hook sees every answer, with the error's code (no adapter reads
 * an answer's body again to log it).
 */
import type { Context, Span } from "@opentelemetry/api";
import { isPembaError, PembaError } from "../errors.ts";
import { type Observability, RequestObservation } from "../observe/observation.ts";
import {
  callerSampled,
  contextOf,
  SpanStatusCode,
  startRequestSpan,
  type Tracing,
  traceIdOf,
} from "../observe/tracing.ts";
import { TENANT_ID_PATTERN, tenantIdRegex } from "../wire/common.ts";
import type { Authenticator, Principal } from "./auth/index.ts";
import { assertTenantAllowed, assertUnrestricted, UNRESTRICTED } from "./auth/index.ts";
import type { CorsPolicy } from "./cors.ts";
import { errorResponseParts } from "./error-response.ts";
import type { Answer, ApiRequest, Observe } from "./exchange.ts";

export type { Answer, AnswerError, ApiRequest, Observe, RequestInfo } from "./exchange.ts";

/** What the pipeline needs to know about an endpoint. */
export interface Endpoint {
  /** The path template reported to `observe`, e.g. "/v1/tenants/:tenant_id/permissions/check". */
  route: string;
  /** Needs a valid key or token when authentication is on (every API endpoint; metadata paths unless public). */
  authenticate: boolean;
  /** The path parameter holding the tenant id, when the endpoint has one. */
  tenantParam?: string;
  /** Tenancy endpoints: need an unrestricted key or token. */
  tenancy?: boolean;
  /** Proto request message name, for `invalid <Message>.TenantId: ...`. */
  requestMessage?: string;
  /** NDJSON stream: errors are sent as `{"error": {...}}` lines. */
  stream?: boolean;
  /** The tenant every request of the endpoint is for (AuthZEN's root paths: `--authzen-tenant`). */
  tenant?: string;
  /**
   * An AuthZEN endpoint: error statuses are the four AuthZEN names (400, 401, 403, 500) and a request's
   * X-Request-ID is echoed on every answer, errors included.
   */
  authzen?: boolean;
  /** No route matched (the 404 answer): `observe` reports the request's path as well. */
  unmatched?: boolean;
}

export interface Call {
  req: ApiRequest;
  tenantId: string;
  principal: Principal;
  /** The request body as the route read it (FetchRoutes sets it before the route's handler runs). */
  body?: unknown;
  /** The request's spans and decision records; undefined when tracing and the decision log are both off. */
  obs?: RequestObservation;
}

export type Handler = (call: Call) => Answer | Promise<Answer>;

const JSON_TYPE = "application/json";
const NDJSON_TYPE = "application/x-ndjson";

/** A JSON answer (200 unless given). */
export const jsonAnswer = (data: unknown, status = 200): Answer => ({
  status,
  headers: ["content-type", JSON_TYPE],
  body: JSON.stringify(data),
});

/** A JSON answer from text that already is JSON. */
export const jsonTextAnswer = (text: string, decision?: string): Answer => ({
  status: 200,
  headers: ["content-type", JSON_TYPE],
  body: text,
  decision,
});

/** A newline-delimited JSON answer. */
export const ndjsonAnswer = (body: string | ReadableStream<Uint8Array>): Answer => ({
  status: 200,
  headers: ["content-type", NDJSON_TYPE],
  body,
});

/** Permify's error body for any thrown value (a stream's errors as `{"error": {...}}` lines, as grpc-gateway). */
export function errorAnswer(e: unknown, stream = false): Answer {
  const { status, body } = errorResponseParts(e);
  const error = {
    code: body.code,
    message: body.message,
    errorCode: isPembaError(e) ? e.code : "ERROR_CODE_INTERNAL",
  };
  return stream
    ? { status, headers: ["content-type", NDJSON_TYPE], body: `${JSON.stringify({ error: body })}\n`, error }
    : { status, headers: ["content-type", JSON_TYPE], body: JSON.stringify(body), error };
}

export interface PipelineDeps {
  auth: Authenticator | undefined;
  cors: CorsPolicy;
  observe: Observe | undefined;
  /**
   * Called after authentication, before the handler: a promise delays the handler until it resolves (the Node
   * server's turn budget, packages/node-server/src/turn-budget.ts); undefined runs it now.
   */
  admit?: () => Promise<void> | undefined;
  /** Tracing and the decision log; undefined (or empty): neither, and no call for them on any request. */
  observability?: Observability;
}

export class RequestPipeline {
  readonly #auth: Authenticator | undefined;
  readonly #cors: CorsPolicy;
  readonly #observe: Observe | undefined;
  readonly #admit: (() => Promise<void> | undefined) | undefined;
  readonly #observability: Observability | undefined;

  constructor(deps: PipelineDeps) {
    this.#auth = deps.auth;
    this.#cors = deps.cors;
    this.#observe = deps.observe;
    this.#admit = deps.admit;
    const o = deps.observability;
    this.#observability = o?.tracing !== undefined || o?.decisions !== undefined ? o : undefined;
  }

  get cors(): CorsPolicy {
    return this.#cors;
  }

  /** Runs `handler` for `req` on `endpoint`; never throws. */
  run(endpoint: Endpoint, req: ApiRequest, handler: Handler): Promise<Answer> {
    const observability = this.#observability;
    if (observability === undefined) return this.#run(endpoint, req, handler, performance.now());
    const tracing = observability.tracing;
    const traceparent = req.header("traceparent");
    // the caller's sampling decision when it sent a valid traceparent, else the sample ratio; an unsampled request
    // without a decision log: nothing to observe, and no OpenTelemetry call
    let traced = false;
    if (tracing !== undefined) {
      const caller = traceparent === undefined ? undefined : callerSampled(traceparent);
      traced = caller ?? tracing.sampleRoot();
    }
    if (!traced && observability.decisions === undefined) {
      return this.#run(endpoint, req, handler, performance.now());
    }
    return this.#runObserved(
      endpoint,
      req,
      handler,
      observability,
      traced ? tracing : undefined,
      traceparent,
    );
  }

  /**
   * A request under tracing or the decision log: the request span joins the caller's `traceparent` (when the
   * sampler records it), and the handler gets the RequestObservation its service calls take.
   */
  async #runObserved(
    endpoint: Endpoint,
    req: ApiRequest,
    handler: Handler,
    observability: Observability,
    tracing: Tracing | undefined,
    traceparent: string | undefined,
  ): Promise<Answer> {
    const start = performance.now();
    let span: Span | undefined;
    let traceId = traceIdOf(traceparent);
    let context: Context | undefined;
    if (tracing !== undefined) {
      const parent = tracing.extract(traceparent, req.header("tracestate"));
      const started = startRequestSpan(tracing, req.method, endpoint.route, parent);
      if (started.isRecording()) {
        span = started;
        traceId = started.spanContext().traceId;
        context = contextOf(parent, span);
      }
    }
    const observedHandler: Handler = (call) =>
      handler({
        ...call,
        obs: new RequestObservation({
          tenantId: call.tenantId,
          principal: call.principal.name ?? "",
          started: start,
          traceId,
          tracer: context === undefined ? undefined : tracing!.tracer,
          context,
          decisions: observability.decisions,
        }),
      });
    const answer = await this.#run(endpoint, req, observedHandler, start);
    if (span !== undefined) {
      span.setAttribute("http.response.status_code", answer.status);
      if (endpoint.tenantParam !== undefined)
        span.setAttribute("pemba.tenant", req.param(endpoint.tenantParam) ?? "");
      if (answer.decision !== undefined) span.setAttribute("pemba.decision", answer.decision);
      if (answer.error !== undefined) {
        span.setAttribute("pemba.error_code", answer.error.errorCode);
        span.setAttribute("rpc.grpc.status_code", answer.error.code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: answer.error.message });
      }
      span.end();
    }
    return answer;
  }

  async #run(endpoint: Endpoint, req: ApiRequest, handler: Handler, start: number): Promise<Answer> {
    const origin = req.header("origin");
    let answer: Answer;
    try {
      // a request without an Origin is not cross-origin: no Host to compare it with
      if (origin !== undefined) this.#cors.admit(origin, req.header("host"));
      const auth = endpoint.authenticate ? this.#auth : undefined;
      const principal =
        auth === undefined ? UNRESTRICTED : await auth.authenticate(req.header("authorization"));
      if (endpoint.tenancy) assertUnrestricted(principal);
      let tenantId = "";
      if (endpoint.tenantParam !== undefined || endpoint.tenant !== undefined) {
        tenantId = endpoint.tenant ?? req.param(endpoint.tenantParam!) ?? "";
        validateTenantId(endpoint.requestMessage ?? "Request", tenantId);
        assertTenantAllowed(principal, tenantId);
      }
      const admitted = this.#admit?.();
      if (admitted !== undefined) await admitted;
      answer = await handler({ req, tenantId, principal, body: undefined, obs: undefined });
    } catch (e) {
      answer = errorAnswer(e, endpoint.stream);
      if (endpoint.authzen) answer.status = authzenStatus(answer.status, e);
    }
    if (endpoint.authzen) {
      const requestId = req.header("x-request-id");
      if (requestId !== undefined) answer.headers.push("x-request-id", requestId);
    }
    if (origin !== undefined) answer.headers.push(...this.#cors.headersFor(origin));
    const observe = this.#observe;
    if (observe !== undefined) {
      try {
        observe({
          method: req.method,
          route: endpoint.route,
          path: endpoint.unmatched ? req.path : undefined,
          status: answer.status,
          seconds: (performance.now() - start) / 1000,
          decision: answer.decision,
          error: answer.error,
        });
      } catch {
        // a failing metrics hook cannot change the answer
      }
    }
    return answer;
  }
}

/** Errors of authentication: AuthZEN's 401 (Permify answers a missing bearer token with gRPC 2, HTTP 500). */
const AUTHENTICATION_ERRORS = new Set<string>([
  "ERROR_CODE_UNAUTHENTICATED",
  "ERROR_CODE_MISSING_BEARER_TOKEN",
  "ERROR_CODE_INVALID_BEARER_TOKEN",
  "ERROR_CODE_INVALID_KEY",
  "ERROR_CODE_INVALID_CLAIMS",
  "ERROR_CODE_INVALID_ISSUER",
  "ERROR_CODE_INVALID_AUDIENCE",
]);

/**
 * AuthZEN's error statuses: 401 for any authentication error, 403 as it is, any other client error 400, any
 * server error 500.
 */
export function authzenStatus(status: number, error: unknown): number {
  if (isPembaError(error) && AUTHENTICATION_ERRORS.has(error.code)) return 401;
  if (status === 401 || status === 403) return status;
  return status >= 500 ? 500 : 400;
}

/** A tenant id from a path: PGV's rules of the request message's TenantId field. */
export function validateTenantId(message: string, tenantId: string): void {
  if (tenantId.length > 128) {
    throw new PembaError(
      "ERROR_CODE_VALIDATION",
      `invalid ${message}.TenantId: value length must be at most 128 bytes`,
      { grpcCode: 3 },
    );
  }
  if (!tenantIdRegex.test(tenantId)) {
    throw new PembaError(
      "ERROR_CODE_VALIDATION",
      `invalid ${message}.TenantId: value does not match regex pattern "${TENANT_ID_PATTERN}"`,
      { grpcCode: 3 },
    );
  }
}
