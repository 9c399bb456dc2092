/**
 * createApp: Pemba's Permify-compatible HTTP API as a Hono app, for Node (@hono/node-server) and Workers alike
 * (web APIs only). All 24 endpoints Permify serves over HTTP, plus Watch as NDJSON, /healthz, /openapi.json, /docs.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { PembaError } from "../errors.ts";
import type { PembaService } from "../service/index.ts";
import { type AuthConfig, createAuthenticator } from "./auth/index.ts";
import {
  createFastCheck,
  type NodeCheckAnswered,
  type NodeRequestLike,
  type NodeResponseLike,
} from "./check-fast-fetch.ts";
import { type CorsOptions, CorsPolicy } from "./cors.ts";
import { DOCS_PAGE } from "./docs-page.ts";
import { errorResponse } from "./error-response.ts";
import { defaultLimits, type Limits } from "./limits.ts";
import { type Observe, type PembaEnv, RouteTable } from "./route.ts";
import { registerBundleRoutes } from "./routes/bundle.ts";
import { registerDataRoutes } from "./routes/data.ts";
import { registerPermissionRoutes } from "./routes/permission.ts";
import { registerSchemaRoutes } from "./routes/schema.ts";
import { registerTenancyRoutes } from "./routes/tenancy.ts";
import { registerWatchRoutes } from "./routes/watch.ts";

export interface AppOptions {
  service: PembaService;
  /** Default: no authentication. */
  auth?: AuthConfig;
  /** Default: same-origin only (see cors.ts). */
  cors?: CorsOptions;
  /**
   * With authentication on, `/metrics`, `/openapi.json` and `/docs` need a valid key or token unless listed here
   * (default: none listed). `/healthz` is always open.
   */
  publicPaths?: readonly PublicPath[];
  /** Serves `GET /metrics` (Prometheus text) when given. */
  metrics?: () => Promise<{ contentType: string; body: string }>;
  limits?: Partial<Limits>;
  /** Called once per request (metrics/logging). */
  observe?: Observe;
  /** Watch stream poll interval (default 250 ms). */
  watchPollMs?: number;
  /** `info.version` of the OpenAPI document. */
  version?: string;
}

export const PUBLIC_PATH_CHOICES = ["/metrics", "/openapi.json", "/docs"] as const;
export type PublicPath = (typeof PUBLIC_PATH_CHOICES)[number];

export type PembaApp = OpenAPIHono<PembaEnv> & {
  /**
   * Node only, optional: answers `POST /v1/tenants/<t>/permissions/check` directly on node:http's (req, res) and
   * returns true; returns false for every other request (hand it to @hono/node-server's listener). Same behaviour
   * as `app.fetch` for checks, without building a Request/Response (the cheapest check on Node), plus a
   * Content-Length. `answered` (optional) is called with the status, the body and the milliseconds taken once the
   * response is handed over.
   */
  handleNodeCheck(req: NodeRequestLike, res: NodeResponseLike, answered?: NodeCheckAnswered): boolean;
};

export function createApp(opts: AppOptions): PembaApp {
  const app = new OpenAPIHono<PembaEnv>();
  const limits: Limits = { ...defaultLimits, ...opts.limits };
  limits.maxBulkCheckItems = Math.min(limits.maxBulkCheckItems, 100);
  const cors = new CorsPolicy(opts.cors);
  const auth = createAuthenticator(opts.auth);
  const routes = new RouteTable(app, auth, cors, opts.observe);
  const deps = { routes, service: opts.service, limits, watchPollMs: opts.watchPollMs ?? 250 };

  app.options(
    "*",
    routes.wrap("preflight", (c) => cors.preflight(c.req.raw)),
  );
  app.get(
    "/healthz",
    routes.wrap("/healthz", () => Response.json({ status: "SERVING" })),
  );
  const publicPaths = new Set<string>(opts.publicPaths ?? []);
  const guarded = (path: PublicPath) => ({ authenticate: !publicPaths.has(path) });
  const metrics = opts.metrics;
  if (metrics !== undefined) {
    app.get(
      "/metrics",
      routes.wrap(
        "/metrics",
        async () => {
          const { contentType, body } = await metrics();
          return new Response(body, { headers: { "content-type": contentType } });
        },
        guarded("/metrics"),
      ),
    );
  }
  app.openAPIRegistry.registerComponent("securitySchemes", "ApiKeyAuth", {
    type: "apiKey",
    in: "header",
    name: "Authorization",
    description: "`Bearer <preshared key or OIDC access token>` (when authentication is enabled)",
  });
  let openApiDocument: string | undefined;
  app.get(
    "/openapi.json",
    routes.wrap(
      "/openapi.json",
      () => {
        openApiDocument ??= JSON.stringify(
          app.getOpenAPIDocument({
            openapi: "3.0.3",
            info: {
              title: "Pemba API (Permify-compatible)",
              version: opts.version ?? "v1",
              description:
                "Permify v1 HTTP API. Errors are {code, message, details} with gRPC codes. Attribute values accept " +
                'Permify\'s Any form {"@type":"type.googleapis.com/base.v1.BooleanValue","data":true} and the short ' +
                'forms {"boolean":true}, {"string":"x"}, {"integer":3}, {"double":1.5}, {"boolean_array":[..]}, ' +
                '{"string_array":[..]}, {"integer_array":[..]}, {"double_array":[..]}.',
            },
          }),
        );
        return new Response(openApiDocument, { headers: { "content-type": "application/json" } });
      },
      guarded("/openapi.json"),
    ),
  );
  app.get(
    "/docs",
    routes.wrap(
      "/docs",
      () => new Response(DOCS_PAGE, { headers: { "content-type": "text/html; charset=utf-8" } }),
      guarded("/docs"),
    ),
  );

  registerTenancyRoutes(deps);
  registerSchemaRoutes(deps);
  registerDataRoutes(deps);
  registerBundleRoutes(deps);
  registerPermissionRoutes(deps);
  registerWatchRoutes(deps);
  routes.finish();

  const notFound = routes.wrap("notFound", () =>
    errorResponse(new PembaError("ERROR_CODE_NOT_FOUND", "Not Found")),
  );
  app.notFound((c) => notFound(c));
  app.onError((e) => errorResponse(e));

  const fastCheck = createFastCheck({ service: opts.service, limits, auth, cors, observe: opts.observe });
  const dispatch = app.fetch;
  app.fetch = (request, env, executionCtx) =>
    fastCheck.fetch(request, env) ?? dispatch(request, env, executionCtx);
  return Object.assign(app, { handleNodeCheck: fastCheck.node });
}
