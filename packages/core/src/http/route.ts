/**
 * The fetch adapter: Hono routes every request, and each route hands it to the one request pipeline
 * (pipeline.ts) as an `ApiRequest`, then turns the pipeline's `Answer` into a Response. `FetchRoutes.add`
 * registers a route of the route table (route-table.ts) and documents it in the OpenAPI registry; `answer` runs
 * the same route's handler for a request that another adapter (the node:http one) has matched already.
 */
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { PembaError } from "../errors.ts";
import type { Answer, ApiRequest, Endpoint, Handler, RequestPipeline } from "./pipeline.ts";
import { readStreamText } from "./request-body.ts";
import type { ApiRoute } from "./route-table.ts";
import { ErrorSchema } from "./wire/common.ts";

export type PembaContext = Context;

/** A route of the table with its OpenAPI documentation. */
export interface RouteDef {
  route: ApiRoute;
  summary: string;
  tag: string;
  description?: string;
  body?: z.ZodType;
  response: z.ZodType;
}

const ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** A Hono request as the pipeline's `ApiRequest`. */
export function honoRequest(c: PembaContext): ApiRequest {
  return {
    method: c.req.method,
    header: (name) => c.req.header(name),
    text: (maxBytes) => readStreamText(c.req.raw.body, maxBytes, c.req.header("content-length")),
    param: (name) => c.req.param(name),
    path: c.req.path,
    signal: c.req.raw.signal,
    url: c.req.url,
  };
}

/** The pipeline's answer as a Response. */
export function toResponse(answer: Answer): Response {
  const headers = new Headers();
  const list = answer.headers;
  for (let i = 0; i < list.length; i += 2) headers.append(list[i]!, list[i + 1]!);
  return new Response(answer.body, { status: answer.status, headers });
}

export class FetchRoutes {
  readonly #app: OpenAPIHono;
  readonly #pipeline: RequestPipeline;
  readonly #methodsByPath = new Map<string, Set<string>>();
  /** Each route's handler and endpoint, as `add` registered them with Hono. */
  readonly #handlers = new Map<ApiRoute, { handler: Handler; endpoint: Endpoint }>();

  constructor(app: OpenAPIHono, pipeline: RequestPipeline) {
    this.#app = app;
    this.#pipeline = pipeline;
  }

  /**
   * Registers an API endpoint with Hono (documented in OpenAPI) and for `answer`; `endpoint` replaces the route's
   * own (AuthZEN's root paths: the same route with the tenant they answer for).
   */
  add(def: RouteDef, handler: Handler, endpoint: Endpoint = def.route.endpoint): void {
    const { method } = def.route;
    if (this.#handlers.has(def.route)) throw new Error(`route registered twice: ${def.route.operationId}`);
    this.#handlers.set(def.route, { handler, endpoint });
    this.#document(def);
    const methods = this.#methodsByPath.get(endpoint.route) ?? new Set<string>();
    methods.add(method);
    this.#methodsByPath.set(endpoint.route, methods);
    this.#app.on(method, endpoint.route, this.serve(endpoint, handler));
  }

  /**
   * Answers `req`, already matched to `route` (its path parameters given by `req.param`), through the pipeline
   * without the router; undefined when no handler is registered for `route`.
   */
  answer(route: ApiRoute, req: ApiRequest): Promise<Answer> | undefined {
    const registered = this.#handlers.get(route);
    return registered === undefined
      ? undefined
      : this.#pipeline.run(registered.endpoint, req, registered.handler);
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
    const { method, path, operationId, endpoint } = def.route;
    const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    this.#app.openAPIRegistry.registerPath({
      method: method.toLowerCase() as "get" | "post" | "patch" | "delete",
      path,
      operationId,
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
          description: endpoint.stream ? "A stream of newline-delimited JSON objects" : "OK",
          content: {
            [endpoint.stream ? "application/x-ndjson" : "application/json"]: { schema: def.response },
          },
        },
        default: {
          description: "An error: gRPC status code, Permify error message, details",
          content: { "application/json": { schema: ErrorSchema } },
        },
      },
    });
  }
}
