/**
 * One place where every endpoint is registered: it documents the route in the OpenAPI registry, and wraps the
 * handler with authentication, tenant checks, CORS headers, error rendering and the `observe` hook. Each route is a
 * single Hono handler (no middleware chain), which keeps the hot check path short.
 */
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { PembaError } from "../errors.ts";
import type { Authenticator, Principal } from "./auth/index.ts";
import { assertTenantAllowed, assertUnrestricted, UNRESTRICTED } from "./auth/index.ts";
import type { CorsPolicy } from "./cors.ts";
import { errorResponse } from "./error-response.ts";
import { ErrorSchema, TENANT_ID_PATTERN, tenantIdRegex } from "./wire/common.ts";

export interface RequestInfo {
  /** The endpoint's path template, e.g. "/v1/tenants/:tenant_id/permissions/check". */
  route: string;
  status: number;
  seconds: number;
  /** The check decision (CHECK_RESULT_*) of a permission check. */
  decision?: string;
}

export type Observe = (info: RequestInfo) => void;

export interface PembaEnv {
  Variables: { decision?: string };
}

export type PembaContext = Context<PembaEnv>;

export interface RouteDef {
  method: "post" | "patch" | "delete";
  /** OpenAPI form: `/v1/tenants/{tenant_id}/permissions/check`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  description?: string;
  /** Proto request message name, for `invalid <Message>.TenantId: ...`. */
  requestMessage: string;
  body?: z.ZodType;
  response: z.ZodType;
  /** NDJSON stream: errors are sent as `{"error": {...}}`. */
  stream?: boolean;
  /** Tenancy endpoints: need an unrestricted key/token. */
  tenancy?: boolean;
}

export type RouteHandler = (
  c: PembaContext,
  tenantId: string,
  principal: Principal,
) => Response | Promise<Response>;

const ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];

export class RouteTable {
  readonly #app: OpenAPIHono<PembaEnv>;
  readonly #auth: Authenticator | undefined;
  readonly #cors: CorsPolicy;
  readonly #observe: Observe | undefined;
  readonly #methodsByPath = new Map<string, Set<string>>();

  constructor(
    app: OpenAPIHono<PembaEnv>,
    auth: Authenticator | undefined,
    cors: CorsPolicy,
    observe?: Observe,
  ) {
    this.#app = app;
    this.#auth = auth;
    this.#cors = cors;
    this.#observe = observe;
  }

  add(def: RouteDef, handler: RouteHandler): void {
    const honoPath = def.path.replace(/\{(\w+)\}/g, ":$1");
    const tenantParam = def.path.includes("{tenant_id}") ? "tenant_id" : undefined;
    this.#document(def);
    const methods = this.#methodsByPath.get(honoPath) ?? new Set<string>();
    methods.add(def.method.toUpperCase());
    this.#methodsByPath.set(honoPath, methods);
    const auth = this.#auth;
    const run = async (c: PembaContext): Promise<Response> => {
      try {
        const principal =
          auth === undefined ? UNRESTRICTED : await auth.authenticate(c.req.header("authorization"));
        if (def.tenancy) assertUnrestricted(principal);
        let tenantId = "";
        if (tenantParam !== undefined) {
          tenantId = c.req.param(tenantParam) ?? "";
          validateTenantId(def.requestMessage, tenantId);
          assertTenantAllowed(principal, tenantId);
        }
        return await handler(c, tenantId, principal);
      } catch (e) {
        return errorResponse(e, { stream: def.stream });
      }
    };
    this.#app.on(def.method.toUpperCase(), honoPath, this.wrap(honoPath, run));
  }

  /**
   * Around any handler: the origin check (a cross-origin request from a page that may not call this server is
   * refused before the handler runs), CORS headers, and the observe hook. `authenticate`: the endpoint needs a
   * valid key or token (any tenant) when authentication is on.
   */
  wrap(
    route: string,
    run: (c: PembaContext) => Promise<Response> | Response,
    options: { authenticate?: boolean } = {},
  ) {
    const cors = this.#cors;
    const observe = this.#observe;
    const auth = options.authenticate ? this.#auth : undefined;
    return async (c: PembaContext): Promise<Response> => {
      const start = observe === undefined ? 0 : performance.now();
      const origin = c.req.header("origin");
      let res: Response;
      try {
        cors.admit(origin, c.req.header("host"));
        if (auth !== undefined) await auth.authenticate(c.req.header("authorization"));
        res = await run(c);
      } catch (e) {
        res = errorResponse(e);
      }
      const extra = cors.headersFor(origin);
      for (let i = 0; i < extra.length; i += 2) {
        if (extra[i] === "vary") res.headers.append("vary", extra[i + 1]!);
        else res.headers.set(extra[i]!, extra[i + 1]!);
      }
      if (observe !== undefined) {
        observe({
          route,
          status: res.status,
          seconds: (performance.now() - start) / 1000,
          decision: c.get("decision"),
        });
      }
      return res;
    };
  }

  /** After all routes: a known path with another method answers 501 like grpc-gateway. */
  finish(): void {
    for (const [path, methods] of this.#methodsByPath) {
      const others = ALL_METHODS.filter((m) => !methods.has(m));
      this.#app.on(
        others,
        path,
        this.wrap(path, () =>
          errorResponse(new PembaError("ERROR_CODE_NOT_IMPLEMENTED", "Method Not Allowed")),
        ),
      );
    }
  }

  #document(def: RouteDef): void {
    const params = [...def.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    this.#app.openAPIRegistry.registerPath({
      method: def.method,
      path: def.path,
      operationId: def.operationId,
      summary: def.summary,
      description: def.description,
      tags: [def.tag],
      security: [{ ApiKeyAuth: [] }],
      request: {
        params: params.length
          ? z.object(
              Object.fromEntries(
                params.map((p) => [p, z.string().openapi({ param: { name: p, in: "path" } })]),
              ),
            )
          : undefined,
        body: def.body
          ? { required: true, content: { "application/json": { schema: def.body } } }
          : undefined,
      },
      responses: {
        200: {
          description: def.stream ? "A stream of newline-delimited JSON objects" : "OK",
          content: { [def.stream ? "application/x-ndjson" : "application/json"]: { schema: def.response } },
        },
        default: {
          description: "An error: gRPC status code, Permify error message, details",
          content: { "application/json": { schema: ErrorSchema } },
        },
      },
    });
  }
}

/** The last tenant id that passed (most requests name the same tenant as the one before). */
let lastValidTenantId: string | undefined;

export function validateTenantId(message: string, tenantId: string): void {
  if (tenantId === lastValidTenantId) return;
  if (tenantId.length > 128) {
    throw new PembaError(
      "ERROR_CODE_VALIDATION",
      `invalid ${message}.TenantId: value length must be at most 128 bytes`,
      {
        grpcCode: 3,
      },
    );
  }
  if (!tenantIdRegex.test(tenantId)) {
    throw new PembaError(
      "ERROR_CODE_VALIDATION",
      `invalid ${message}.TenantId: value does not match regex pattern "${TENANT_ID_PATTERN}"`,
      { grpcCode: 3 },
    );
  }
  lastValidTenantId = tenantId;
}
