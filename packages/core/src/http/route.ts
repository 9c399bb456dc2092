/**
 * The fetch adapter: Hono routes every request, and each route hands it to the one request pipeline
 * (pipeline.ts) as an `ApiRequest`, then turns the pipeline's `Answer` into a Response. `FetchRoutes.add`
 * registers a route of the route table (route-table.ts), documents it in the OpenAPI registry, and reads its body
 * once for the handler (parsed and validated with the route's wire schema, or by the route's own reader); `answer`
 * runs the same route's handler for a request that another adapter (the node:http one, gRPC) has matched already.
 */
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { PembaError } from "../errors.ts";
import { ErrorSchema } from "../wire/common.ts";
import { parseWire } from "../wire/pgv.ts";
import type { Answer, ApiRequest, Call, Endpoint, Handler, RequestPipeline } from "./pipeline.ts";
import { readJsonBody, readStreamText } from "./request-body.ts";
import type { ApiRoute } from "./route-table.ts";

export type PembaContext = Context;

/** A route of the table with its OpenAPI documentation and how its body is read. */
export interface RouteDef<Body = unknown> {
  route: ApiRoute;
  summary: string;
  tag: string;
  description?: string;
  /**
   * The request body's wire schema: documented in OpenAPI and, unless `read` is given, what the body is parsed
   * (JSON) and validated with before the handler runs. Without it the route takes no body.
   */
  body?: z.ZodType;
  /** The largest body accepted, in bytes (default: the app's `maxBodyBytes`). */
  maxBodyBytes?: number;
  /**
   * Reads the body instead of JSON.parse and `body`'s schema: the check and explain (their fast scanner, zod for
   * anything it leaves), AuthZEN (its own Content-Type rule and error words).
   */
  read?: (req: ApiRequest, maxBytes: number) => Body | Promise<Body>;
  response: z.ZodType;
}

/** A call with the request body as the route read it. */
export type BodyCall<Body> = Omit<Call, "body"> & { body: Body };

/** A route's handler: it gets the body parsed and validated. */
export type RouteHandler<Body> = (call: BodyCall<Body>) => Answer | Promise<Answer>;

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

/**
 * `handler` behind the reading of its body: a body the transport decoded already (`req.parsedBody`) is taken as
 * it is; else `def.read`, else JSON and `def.body`'s schema. The call's `body` is set in place (one object per
 * request).
 */
function withBody(def: RouteDef, handler: Handler, maxBytes: number): Handler {
  const { read, body: schema } = def;
  if (read !== undefined) {
    return (call) => {
      const given = call.req.parsedBody;
      if (given !== undefined) {
        call.body = given;
        return handler(call);
      }
      const body = read(call.req, maxBytes);
      if (!(body instanceof Promise)) {
        call.body = body;
        return handler(call);
      }
      return body.then((b) => {
        call.body = b;
        return handler(call);
      });
    };
  }
  if (schema !== undefined) {
    return async (call) => {
      call.body = parseWire(schema, await readJsonBody(call.req, maxBytes));
      return handler(call);
    };
  }
  return handler;
}

export class FetchRoutes {
  readonly #app: OpenAPIHono;
  readonly #pipeline: RequestPipeline;
  readonly #methodsByPath = new Map<string, Set<string>>();
  /** Each route's handler and endpoint, as `add` registered them with Hono. */
  readonly #handlers = new Map<ApiRoute, { handler: Handler; endpoint: Endpoint }>();
  readonly #maxBodyBytes: number;

  /** `maxBodyBytes`: the largest body of a route that names no limit of its own. */
  constructor(app: OpenAPIHono, pipeline: RequestPipeline, maxBodyBytes: number) {
    this.#app = app;
    this.#pipeline = pipeline;
    this.#maxBodyBytes = maxBodyBytes;
  }

  /**
   * Registers an API endpoint with Hono (documented in OpenAPI) and for `answer`; `endpoint` replaces the route's
   * own (AuthZEN's root paths: the same route with the tenant they answer for). The handler gets the body as
   * `def.read` gives it, else parsed and validated with `def.body`, else undefined.
   */
  add<S extends z.ZodType>(
    def: RouteDef & { body: S; read?: undefined },
    handler: RouteHandler<z.output<S>>,
    endpoint?: Endpoint,
  ): void;
  add<Body>(
    def: RouteDef<Body> & { read: NonNullable<RouteDef<Body>["read"]> },
    handler: RouteHandler<Body>,
    endpoint?: Endpoint,
  ): void;
  add(def: RouteDef & { body?: undefined }, handler: RouteHandler<undefined>, endpoint?: Endpoint): void;
  add(def: RouteDef, routeHandler: RouteHandler<never>, endpoint: Endpoint = def.route.endpoint): void {
    const { method } = def.route;
    if (this.#handlers.has(def.route)) throw new Error(`route registered twice: ${def.route.operationId}`);
    const handler = withBody(def, routeHandler as unknown as Handler, def.maxBodyBytes ?? this.#maxBodyBytes);
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
