/**
 * The Cloudflare Worker: the same core Hono app (createApp + PembaService) as the Node server, on a store chosen
 * by PEMBA_DATABASE — `memory:` (default: an in-isolate MemoryStore, for demos and tests; state lives as long as
 * the isolate), `d1:<BINDING>` (a D1 database, with per-request D1 sessions: src/d1.ts) or a libSQL server over
 * HTTP (`libsql://` / `https://`, token in PEMBA_DATABASE_TOKEN).
 *
 * The store and the app are built once per isolate, on the first request, and shared by every later request.
 * It imports `@pemba/core`'s runtime-neutral entry only (never `@pemba/core/node`, which pulls in better-sqlite3, pg
 * and node:fs); `@libsql/client`'s `workerd` export condition selects its web build (fetch/WebSocket).
 */

import type { Store } from "@pemba/core";
import {
  createApp,
  LibsqlStore,
  MemoryStore,
  type PembaApp,
  PembaService,
  ReplicaStore,
  redactDatabaseUrl,
} from "@pemba/core";
import workerPackage from "../package.json" with { type: "json" };
import { resolveWorkerConfig, type WorkerConfig, type WorkerEnv } from "./config.ts";
import { d1Binding, openD1Store, withD1Sessions } from "./d1.ts";
import { countQuery, loggedRequest, observeRequest } from "./request-log.ts";

export { ConfigError, resolveWorkerConfig, type WorkerConfig, type WorkerEnv } from "./config.ts";

/** The Workers runtime's ExecutionContext (waitUntil, passThroughOnException, props), as Hono types it. */
export type WorkerExecutionContext = NonNullable<Parameters<PembaApp["fetch"]>[2]>;

interface Instance {
  config: WorkerConfig;
  store: Store;
  app: PembaApp;
  /** Runs one request in the store's per-request scope (D1 sessions); others run it as is. */
  scope: <T>(run: () => T) => T;
}

let instance: Promise<Instance> | undefined;

async function openInstance(env: WorkerEnv): Promise<Instance> {
  const config = resolveWorkerConfig(env);
  const d1 = config.d1Binding === undefined ? undefined : d1Binding(env, config.d1Binding);
  const database: Store =
    config.driver === "memory"
      ? new MemoryStore()
      : d1 !== undefined
        ? await openD1Store(d1, countQuery)
        : await LibsqlStore.open(config.database, { authToken: config.databaseToken, onQuery: countQuery });
  // the in-isolate replica: each tenant loaded on its first request, kept fresh by requests (no timers on Workers)
  const store =
    config.replica === undefined
      ? database
      : ReplicaStore.lazy(database, {
          maxRows: config.replica.maxRows,
          freshnessMs: config.replica.freshnessMs,
          logger: replicaLogger,
        });
  const scope = d1 === undefined ? <T>(run: () => T) => run() : <T>(run: () => T) => withD1Sessions(d1, run);
  const app = createApp({
    // with the replica, its looks at the database renew the cached head schema; the TTL is the fallback for
    // tenants it does not hold (and must outlast one refresh window, or each look would race a schema read)
    service: new PembaService(store, {
      maxWatchStreams: config.maxWatchStreams,
      maxCompiledSchemaBytes: config.maxCompiledSchemaMb * 1048576,
      headSchemaTtlMs: config.replica === undefined ? undefined : 2 * config.replica.freshnessMs + 1000,
    }),
    auth: config.auth,
    cors: config.corsOrigins === undefined ? undefined : { origins: config.corsOrigins },
    corsSetting: "PEMBA_CORS_ORIGINS",
    observe: observeRequest,
    version: workerPackage.version,
  });
  return { config, store, app, scope };
}

/** The isolate's store and app, opened on first use; a failed open is retried by the next request. */
function getInstance(env: WorkerEnv): Promise<Instance> {
  if (instance === undefined) {
    const opening = openInstance(env);
    instance = opening;
    opening.catch(() => {
      if (instance === opening) instance = undefined;
    });
  }
  return instance;
}

/** The replica's log lines (a tenant too large for it, a reload), as one JSON line each. */
const replicaLogger = {
  info: (fields: object, msg: string) => console.log(JSON.stringify({ level: "info", msg, ...fields })),
  warn: (fields: object, msg: string) => console.warn(JSON.stringify({ level: "warn", msg, ...fields })),
};

/** Permify's error body for a Worker that could not start (bad configuration or unreachable database). */
function startupFailure(error: unknown, env: WorkerEnv): Response {
  const configError = error instanceof Error && error.name === "ConfigError";
  let message = error instanceof Error ? error.message : String(error);
  // Never echo the database token (libSQL errors may quote the URL).
  const token = env.PEMBA_DATABASE_TOKEN?.trim();
  if (token) message = message.split(token).join("***");
  if (!configError && env.PEMBA_DATABASE) {
    message = `cannot open database ${redactDatabaseUrl(env.PEMBA_DATABASE.trim())}: ${message}`;
  }
  // gRPC 13 Internal (500) for a misconfiguration, 14 Unavailable (503) for a database that did not answer.
  const body = { code: configError ? 13 : 14, message, details: [] };
  return new Response(JSON.stringify(body), {
    status: configError ? 500 : 503,
    headers: { "content-type": "application/json" },
  });
}

export default {
  fetch(request: Request, env: WorkerEnv, ctx: WorkerExecutionContext): Promise<Response> {
    return loggedRequest(request, async () => {
      let instance: Instance;
      try {
        instance = await getInstance(env);
      } catch (error) {
        return startupFailure(error, env);
      }
      return instance.scope(() => instance.app.fetch(request, env, ctx));
    });
  },

  /** Cron trigger (see wrangler.toml `[triggers]`): garbage-collects data deleted longer than PEMBA_GC_WINDOW ago. */
  async scheduled(_controller: unknown, env: WorkerEnv, _ctx: WorkerExecutionContext): Promise<void> {
    const { config, store, scope } = await getInstance(env);
    if (config.gcWindowMs <= 0) return;
    await scope(() => store.gc(new Date(Date.now() - config.gcWindowMs)));
  },
};
