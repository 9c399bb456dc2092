/**
 * The fetch adapter: Hono routes every request, and each route hands it to the one request pipeline
 * (pipeline.ts) as an `ApiRequest`, then turns the pipeline's `Answer` into a Response. `RouteTable.add` also
 * documents the endpoint in the OpenAPI registry.
 */
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { PembaError } from "../errors.ts";
import type { Answer, ApiRequest, Endpoint, Handler, RequestPipeline } from "./pipeline.ts";
import { readStreamText } from "./request-body.ts";
import { ErrorSchema } from "./wire/common.ts";

export type PembaContext = Context;

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

const ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** A Hono request as the pipeline's `ApiRequest`. */
export function honoRequest(c: PembaContext): ApiRequest {
  return {
    header: (name) => c.req.header(name),
    text: (maxBytes) => readStreamText(c.req.raw.body, maxBytes, c.req.header("content-length")),
    param: (name) => c.req.param(name),
    signal: c.req.raw.signal,
  };
}

/** The pipeline's answer as a Response. */
export function toResponse(answer: Answer): Response {
  const headers = new Headers();
  const list = answer.headers;
  for (let i = 0; i < list.length; i += 2) headers.append(list[i]!, list[i + 1]!);
  return new Response(answer.body, { status: answer.status, headers });
}

/** The endpoint of a route definition. */
export function endpointOf(def: RouteDef): Endpoint {
  return {
    route: def.path.replace(/\{(\w+)\}/g, ":$1"),
    authenticate: true,
    tenantParam: def.path.includes("{tenant_id}") ? "tenant_id" : undefined,
    tenancy: def.tenancy,
    requestMessage: def.requestMessage,
    stream: def.stream,
  };
}

export class RouteTable {
  readonly #app: OpenAPIHono;
  readonly #pipeline: RequestPipeline;
  readonly #methodsByPath = new Map<string, Set<string>>();

  constructor(app: OpenAPIHono, pipeline: RequestPipeline) {
    this.#app = app;
    this.#pipeline = pipeline;
  }

  /** Registers an API endpoint (documented in OpenAPI); returns its endpoint and handler for other adapters. */
  add(def: RouteDef, handler: Handler): { endpoint: Endpoint; handler: Handler } {
    const endpoint = endpointOf(def);
    this.#document(def);
    const methods = this.#methodsByPath.get(endpoint.route) ?? new Set<string>();
    methods.add(def.method.toUpperCase());
    this.#methodsByPath.set(endpoint.route, methods);
    this.#app.on(def.method.toUpperCase(), endpoint.route, this.serve(endpoint, handler));
    return { endpoint, handler };
  }

  /** A Hono handler that runs `handler` through the pipeline. */
  serve(endpoint: Endpoint, handler: Handler) {
    const pipeline = this.#pipeline;
    return async (c: PembaContext): Promise<Response> =>
      toResponse(await pipeline.run(endpoint, honoRequest(c), handler));
  }

  /** After all routes: a known path with another method answers 501 like grpc-gateway. */
  finish(): void {
    for (const [path, methods] of this.#methodsByPath) {
      const others = ALL_METHODS.filter((m) => !methods.has(m));
      this.#app.on(
        others,
        path,
        this.serve({ route: path, authenticate: false }, () => {
          throw new PembaError("ERROR_CODE_NOT_IMPLEMENTED", "Method Not Allowed");
        }),
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
