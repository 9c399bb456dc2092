/**
 * The Cloudflare Worker's handlers (index.ts is the deployed module: `createWorker` over the module's env): the core wiring (createPemba: store, replica, service, app) on a store chosen by
 * PEMBA_DATABASE — `memory:` (default: an in-isolate MemoryStore, for demos and tests; state lives as long as the
 * isolate), `d1:<BINDING>` (a D1 database, with per-request D1 sessions: src/d1.ts; `d1:DB,DB2,...` spreads the
 * tenants over several) or a libSQL server over HTTP
 * (`libsql://` / `https://`, token in PEMBA_DATABASE_TOKEN).
 *
 * The store and the app are built once per isolate and shared by every later request: at module evaluation when
 * the entry passes the env it has then and the store opens without I/O (`memory:`, D1: the first reads carry the
 * migration check), else on the first request (libSQL: opening talks to the server, which Workers allow only
 * within a request).
 * It imports `@pemba/core`'s runtime-neutral entry only (never `@pemba/core/node`, which pulls in better-sqlite3, pg
 * and node:fs); `@libsql/client`'s `workerd` export condition selects its web build (fetch/WebSocket).
 */

import { consoleAssets } from "@pemba/console";
import {
  compileSchema,
  createPemba,
  DEFAULT_LIBSQL_REPLICA_WAIT_MS,
  LibsqlStore,
  type LogLevel,
  MemoryStore,
  type Pemba,
  type PembaApp,
  parseSchema,
  ReadReplicaStore,
  redactDatabaseUrl,
  setSharedWorkKeeper,
  sharedWork,
} from "@pemba/core";
import workerPackage from "../package.json" with { type: "json" };
import { resolveWorkerConfig, type WorkerConfig, type WorkerEnv } from "./config.ts";
import { aroundBinding, d1Binding, openD1Stores, withD1Sessions } from "./d1.ts";
import { type WorkerObservability, workerObservability } from "./observability.ts";
import {
  afterResponse,
  countQuery,
  keepAlive,
  loggedRequest,
  observeRequest,
  writesAt,
} from "./request-log.ts";

export { ConfigError, resolveWorkerConfig, type WorkerConfig, type WorkerEnv } from "./config.ts";

/** The Workers runtime's ExecutionContext (waitUntil, passThroughOnException, props), as Hono types it. */
export type WorkerExecutionContext = NonNullable<Parameters<PembaApp["fetch"]>[2]>;

/** The Worker's store, replica, service and app for these vars and bindings (the isolate opens it once). */
export async function openWorker(
  env: WorkerEnv,
  onConfig?: (config: WorkerConfig, observability: WorkerObservability | undefined) => void,
): Promise<Pemba> {
  const config = resolveWorkerConfig(env);
  const observability = workerObservability(config);
  onConfig?.(config, observability);
  const d1 = config.d1Bindings?.map((name) => ({
    name,
    db: aroundBinding(d1Binding(env, name, config.database), config.d1Simulate),
  }));
  return createPemba(config, {
    name: "worker",
    openStore: (database, readReplicas) =>
      config.driver === "memory"
        ? new MemoryStore()
        : d1 !== undefined
          ? openD1Stores(d1, config.d1Tenants, countQuery)
          : openLibsql(database, readReplicas, config.databaseToken),
    replica: "lazy",
    // a cold isolate answers from the database while a tenant loads; the load outlives the request that started it
    background: afterResponse,
    logger: replicaLogger(config.logLevel),
    observe: observeRequest,
    observability,
    version: workerPackage.version,
    console: consoleAssets,
    scope: d1 === undefined ? undefined : withD1Sessions,
    // Permify's gRPC services as Connect and gRPC-Web (a fetch Response has no trailers, so no native gRPC)
    connect: true,
  });
}

/**
 * A libSQL server database; with replica URLs (sqld replicas, nearest first) the primary and them as one
 * ReadReplicaStore: reads at the nearest replica that has their snap (a token it has not reached waits briefly for
 * it, then goes to the primary), writes to the primary. The replicas receive the tables by replication: never
 * migrated.
 */
async function openLibsql(database: string, replicas: readonly string[], authToken: string | undefined) {
  const primary = await LibsqlStore.open(database, { authToken, onQuery: countQuery });
  if (replicas.length === 0) return primary;
  return new ReadReplicaStore(
    primary,
    replicas.map((url) => () => LibsqlStore.open(url, { authToken, onQuery: countQuery, migrate: false })),
    { waitMs: DEFAULT_LIBSQL_REPLICA_WAIT_MS },
  );
}

/** The replica's log lines (a tenant too large for it, a reload), as one JSON line each, at `level` and above. */
function replicaLogger(level: LogLevel) {
  return {
    info: (fields: object, msg: string) => {
      if (writesAt(level, "info")) console.log(JSON.stringify({ level: "info", msg, ...fields }));
    },
    warn: (fields: object, msg: string) => {
      if (writesAt(level, "warn")) console.warn(JSON.stringify({ level: "warn", msg, ...fields }));
    },
  };
}

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

/** The Worker module's handlers (fetch, the cron trigger), with their isolate's one store and app. */
export interface WorkerHandlers {
  fetch(request: Request, env: WorkerEnv, ctx: WorkerExecutionContext): Promise<Response>;
  scheduled(controller: unknown, env: WorkerEnv, ctx: WorkerExecutionContext): Promise<void>;
}

/**
 * The handlers of one isolate. With `startEnv` (the module's env, at module evaluation) the store and app are built
 * now when that needs no I/O (`memory:` and D1), so the isolate's first request finds them ready; otherwise (and
 * after a failed open) the next request builds them from its env.
 */
export function createWorker(startEnv?: WorkerEnv): WorkerHandlers {
  // promises several requests await stay with the request that started them until they settle (shared-work.ts)
  setSharedWorkKeeper(keepAlive);
  let instance: Promise<Pemba> | undefined;
  /** PEMBA_LOG_LEVEL once the Worker has read its settings; until then (or when it cannot start) every line is written. */
  let logLevel: LogLevel = "info";
  /** Traces and decision records to send after each response (undefined: both off). */
  let observability: WorkerObservability | undefined;

  /** The isolate's store and app, opened on first use; a failed open is retried by the next request. */
  const getInstance = (env: WorkerEnv): Promise<Pemba> => {
    if (instance === undefined) {
      const opening = openWorker(env, (config, observing) => {
        logLevel = config.logLevel;
        observability = observing;
      });
      instance = sharedWork(opening);
      opening.catch(() => {
        if (instance === opening) instance = undefined;
      });
    }
    return instance;
  };
  // a failure here is the first request's to answer (getInstance opens again from its env)
  if (startEnv !== undefined && opensWithoutIo(startEnv)) {
    getInstance(startEnv).catch(() => {});
    warmUpSchemaCode();
  }

  return {
    fetch(request, env, ctx) {
      return loggedRequest(
        request,
        async () => {
          let pemba: Pemba;
          try {
            pemba = await getInstance(env);
          } catch (error) {
            return startupFailure(error, env);
          }
          const response = await pemba.fetch(request, env, ctx);
          if (observability !== undefined) ctx.waitUntil(observability.afterResponse());
          return response;
        },
        ctx,
        () => logLevel,
      );
    },

    /** Cron trigger (see wrangler.toml `[triggers]`): garbage-collects data deleted longer than PEMBA_GC_WINDOW ago. */
    async scheduled(_controller, env, _ctx) {
      await (await getInstance(env)).gc();
    },
  };
}

/**
 * A small schema parsed and compiled at module evaluation: V8 compiles a function's code at its first call, so the
 * isolate's first request would otherwise pay for the parser's and compiler's (its tenant's schema is compiled
 * then). Every kind of rule the parser knows, once.
 */
export const WARM_UP_SCHEMA = `entity user {}
entity team {
  relation member @user
}
entity doc {
  relation team @team
  relation owner @user @team#member
  attribute public boolean
  permission edit = owner or team.member
  permission view = edit or is_public(public)
  permission share = owner and team.member
  permission suggest = view not owner
}
rule is_public(public boolean) {
  public == true
}`;

function warmUpSchemaCode(): void {
  try {
    compileSchema(parseSchema(WARM_UP_SCHEMA));
  } catch {
    // never in the way of the isolate's start (the schema is fixed and valid: entry.test.ts compiles it)
  }
}

/** Whether opening the store for these settings sends nothing (so it may run outside a request). */
function opensWithoutIo(env: WorkerEnv): boolean {
  try {
    return resolveWorkerConfig(env).driver !== "libsql";
  } catch {
    return false; // a configuration error: answered by the first request
  }
}
