/**
 * createApp: Pemba's Permify-compatible HTTP API as a Hono app, for Node and Workers alike (web APIs only). All 24
 * endpoints Permify serves over HTTP, plus Watch as NDJSON, /healthz, /metrics, /openapi.json, /docs. Every request
 * runs through the one request pipeline (pipeline.ts); `handle` runs a route of the table through it without the
 * router, for the node:http adapter of packages/node-server.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { PembaError } from "../errors.ts";
import type { Observability } from "../observe/observation.ts";
import type { PembaService } from "../service/index.ts";
import { type AuthConfig, createAuthenticator } from "./auth/index.ts";
import { type CorsOptions, CorsPolicy } from "./cors.ts";
import { docsPage } from "./docs-page.ts";
import { errorResponse } from "./error-response.ts";
import { defaultLimits, type Limits } from "./limits.ts";
import { type Answer, type ApiRequest, type Observe, RequestPipeline } from "./pipeline.ts";
import { FetchRoutes } from "./route.ts";
import type { ApiRoute } from "./route-table.ts";
import { registerAuthzenRoutes } from "./routes/authzen.ts";
import { registerBundleRoutes } from "./routes/bundle.ts";
import { registerDataRoutes } from "./routes/data.ts";
import { registerDumpRoutes } from "./routes/dump.ts";
import { registerPermissionRoutes } from "./routes/permission.ts";
import { registerSchemaRoutes } from "./routes/schema.ts";
import { registerTenancyRoutes } from "./routes/tenancy.ts";
import { registerWatchRoutes } from "./routes/watch.ts";

export const PUBLIC_PATH_CHOICES = ["/metrics", "/openapi.json", "/docs"] as const;
export type PublicPath = (typeof PUBLIC_PATH_CHOICES)[number];

export interface AppOptions {
  service: PembaService;
  /** Default: no authentication. */
  auth?: AuthConfig;
  /** Default: same-origin only (see cors.ts). */
  cors?: CorsOptions;
  /** The setting that allows origins, named when a request's origin is refused (default `--cors-origins`). */
  corsSetting?: string;
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
  /** Tracing and the decision log (default: neither). */
  observability?: Observability;
  /** Delays each request's handler (after authentication) while it returns a promise: see PipelineDeps.admit. */
  admit?: () => Promise<void> | undefined;
  /** Watch stream poll interval (default 250 ms). */
  watchPollMs?: number;
  /** `info.version` of the OpenAPI document. */
  version?: string;
  /** The browser console's built files, served at `/console` (the entries pass them: core never builds them). */
  console?: ConsoleAssets;
  /** The tenant whose AuthZEN decision point is also served at the root paths (`/access/v1/...`). */
  authzenTenant?: string;
}

/**
 * The browser console as built files: `index.html` is served at `/console`, every other file at `/console/<name>`.
 * The page itself holds no data and is served without a key; every API call it makes carries the key typed into it.
 */
export interface ConsoleAssets {
  files: Readonly<Record<string, { contentType: string; body: string }>>;
}

export type PembaApp = OpenAPIHono & {
  /**
   * Answers a request of `route` (a route of the table, `ROUTES`; `req.param` gives its decoded path parameters)
   * through the request pipeline with the handler Hono serves it with, without the router: what the node:http
   * adapter calls. Undefined when the app has no handler for `route`.
   */
  handle(route: ApiRoute, req: ApiRequest): Promise<Answer> | undefined;
  /** The app's CORS policy: what the transports other than its own routes (Connect, gRPC-Web) answer origins with. */
  readonly cors: CorsPolicy;
};

/** `GET /console` (the page) and `GET /console/<file>`; `/console/` redirects to `/console` (relative links). */
function registerConsole(app: OpenAPIHono, routes: FetchRoutes, assets: ConsoleAssets): void {
  const page = assets.files["index.html"];
  if (page === undefined) throw new Error("console assets without index.html");
  const serve = (file: { contentType: string; body: string }): Answer => ({
    status: 200,
    headers: ["content-type", file.contentType, "cache-control", "no-cache"],
    body: file.body,
  });
  const metadata = { route: "/console", authenticate: false };
  app.get(
    "/console",
    routes.serve(metadata, () => serve(page)),
  );
  app.get(
    "/console/",
    routes.serve(metadata, () => ({ status: 301, headers: ["location", "../console"], body: null })),
  );
  app.get(
    "/console/:file",
    routes.serve({ route: "/console/:file", authenticate: false }, ({ req }) => {
      const name = req.param("file") ?? "";
      // own files only: `__proto__`, `constructor` or `toString` must not answer Object.prototype's members
      const file =
        name === "index.html" || !Object.hasOwn(assets.files, name) ? undefined : assets.files[name];
      if (file === undefined) throw new PembaError("ERROR_CODE_NOT_FOUND", "Not Found");
      return serve(file);
    }),
  );
}

export function createApp(opts: AppOptions): PembaApp {
  const app = new OpenAPIHono();
  const limits: Limits = { ...defaultLimits, ...opts.limits };
  limits.maxBulkCheckItems = Math.min(limits.maxBulkCheckItems, 100);
  const cors = new CorsPolicy(opts.cors, opts.corsSetting);
  const pipeline = new RequestPipeline({
    auth: createAuthenticator(opts.auth),
    cors,
    observe: opts.observe,
    admit: opts.admit,
    observability: opts.observability,
  });
  const routes = new FetchRoutes(app, pipeline, limits.maxBodyBytes);
  const deps = { routes, service: opts.service, limits, watchPollMs: opts.watchPollMs ?? 250 };
  const publicPaths = new Set<string>(opts.publicPaths ?? []);
  const metadata = (route: PublicPath) => ({ route, authenticate: !publicPaths.has(route) });
  const fixed = (contentType: string, body: string): Answer => ({
    status: 200,
    headers: ["content-type", contentType],
    body,
  });

  app.options(
    "*",
    routes.serve({ route: "preflight", authenticate: false }, ({ req }) => cors.preflight(req)),
  );
  app.get(
    "/healthz",
    routes.serve({ route: "/healthz", authenticate: false }, () =>
      fixed("application/json", '{"status":"SERVING"}'),
    ),
  );
  const metrics = opts.metrics;
  if (metrics !== undefined) {
    app.get(
      "/metrics",
      routes.serve(metadata("/metrics"), async () => {
        const { contentType, body } = await metrics();
        return fixed(contentType, body);
      }),
    );
  }
  app.openAPIRegistry.registerComponent("securitySchemes", "ApiKeyAuth", {
    type: "apiKey",
    in: "header",
    name: "Authorization",
    description: "`Bearer <preshared key or OIDC access token>` (when authentication is enabled)",
  });
  let openApi: { json: string; docs: string } | undefined;
  const openApiPages = () => {
    if (openApi === undefined) {
      const doc = app.getOpenAPIDocument({
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
      });
      openApi = { json: JSON.stringify(doc), docs: docsPage(doc) };
    }
    return openApi;
  };
  app.get(
    "/openapi.json",
    routes.serve(metadata("/openapi.json"), () => fixed("application/json", openApiPages().json)),
  );
  app.get(
    "/docs",
    routes.serve(metadata("/docs"), () => fixed("text/html; charset=utf-8", openApiPages().docs)),
  );
  // the page's links are relative (openapi.json), so /docs/ sends the browser to /docs instead of serving it
  app.get(
    "/docs/",
    routes.serve(metadata("/docs"), () => ({ status: 301, headers: ["location", "../docs"], body: null })),
  );

  if (opts.console !== undefined) registerConsole(app, routes, opts.console);

  registerTenancyRoutes(deps);
  registerSchemaRoutes(deps);
  registerDataRoutes(deps);
  registerBundleRoutes(deps);
  registerPermissionRoutes(deps);
  registerWatchRoutes(deps);
  registerAuthzenRoutes(deps, opts.authzenTenant);
  registerDumpRoutes(deps);
  routes.finish();

  const notFound = routes.serve({ route: "notFound", authenticate: false, unmatched: true }, () => {
    throw new PembaError("ERROR_CODE_NOT_FOUND", "Not Found");
  });
  app.notFound((c) => notFound(c));
  app.onError((e) => errorResponse(e));
  // Hono builds its router's matchers at the first match: here, with the app (a Worker builds the app at module
  // evaluation), not in the first request
  app.router.match("GET", "/healthz");

  return Object.assign(app, {
    handle: (route: ApiRoute, req: ApiRequest) => routes.answer(route, req),
    cors,
  });
}
