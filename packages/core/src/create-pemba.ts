/**
 * createPemba: store -> replica -> service -> app, wired once for the Node server and the Worker alike. The runtime
 * says what differs: how a database setting becomes a store, when the replica loads, its hooks, and the scope a
 * request runs in. Listening, shutdown and logging stay with the entries.
 */
import { createConnectFetchHandler } from "./grpc/fetch.ts";
import { type AppOptions, createApp, type PembaApp } from "./http/app.ts";
import { fetchRoutes } from "./http/fetch-routes.ts";
import { defaultLimits } from "./http/limits.ts";
import type { Observe } from "./http/pipeline.ts";
import { PembaService, type SchemaParser } from "./service/index.ts";
import { schemaPreloadKeys } from "./service/preload-keys.ts";
import type { Runtime } from "./settings/definition.ts";
import { settingName } from "./settings/definition.ts";
import type { PembaSettings } from "./settings/resolve.ts";
import {
  type BackgroundWork,
  type ReplicaLogger,
  ReplicaStore,
  WorkingSetBudget,
} from "./store/proxies/replica/index.ts";
import { ShardedStore } from "./store/proxies/shards/sharded-store.ts";
import type { Store } from "./store/store.ts";

export interface PembaRuntime {
  /** Whose settings these are: messages name them as this runtime spells them. */
  name: Runtime;
  /**
   * Opens the database a `database` setting names, with the read replicas `databaseReadReplicas` names (createPemba
   * puts the working-set replica in front).
   */
  openStore(database: string, readReplicas: readonly string[]): Promise<Store> | Store;
  /**
   * "startup": the tenants followed are kept fresh by a timer and write notices (Node). "lazy": by the requests
   * themselves (Workers: no I/O outside a request).
   */
  replica: "startup" | "lazy";
  /**
   * Lazy replicas: runs a look at the database after the response that found it due and keeps it alive (Workers:
   * `ctx.waitUntil`). See LazyReplicaOptions.background.
   */
  background?: BackgroundWork;
  /** The replica's log lines. */
  logger?: ReplicaLogger;
  observe?: Observe;
  /** Tracing (the runtime's OpenTelemetry tracer) and the decision log (its sink); default neither. */
  observability?: AppOptions["observability"];
  admit?: AppOptions["admit"];
  metrics?: AppOptions["metrics"];
  /** `info.version` of the OpenAPI document. */
  version?: string;
  /** The browser console's built files, served at `/console` (the entries pass `@pemba/console`'s). */
  console?: AppOptions["console"];
  /**
   * Where schema writes are parsed and checked (default: the event loop, in turns). The Node server passes a
   * worker thread's (`SchemaParseWorker`, `@pemba/core/node`); closed with the Pemba.
   */
  schemaParser?: SchemaParser;
  /** Runs a request or a garbage collection in the store's per-request scope (D1 sessions). */
  scope?: <T>(run: () => T) => T;
  /**
   * `fetch` also answers Connect and gRPC-Web calls of Permify's gRPC services (grpc/fetch.ts), each through its
   * HTTP route's handler: for a runtime that serves HTTP by fetch alone (the Worker), where native gRPC is not
   * possible.
   */
  connect?: boolean;
}

export interface Pemba {
  store: Store;
  service: PembaService;
  app: PembaApp;
  /**
   * `app.fetch` in the runtime's scope (with `runtime.connect`: Connect and gRPC-Web calls first); the table's
   * non-streaming routes go straight to the app's pipeline (http/fetch-routes.ts).
   */
  fetch: PembaApp["fetch"];
  /** Removes what was deleted longer than the GC window ago (rows removed); 0 when the window is 0. */
  gc(): Promise<number>;
  /** Ends open watch streams and closes the store. */
  close(): Promise<void>;
  /** The replica's working set (estimated bytes, entries, evictions so far); undefined without a replica. */
  workingSet?: Readonly<Pick<WorkingSetBudget, "bytes" | "entries" | "evictions" | "maxBytes">>;
}

/** The largest Connect request message: the largest request body the HTTP API takes. */
const CONNECT_READ_MAX_BYTES = Math.max(defaultLimits.maxBodyBytes, defaultLimits.maxSchemaBodyBytes);

export async function createPemba(settings: PembaSettings, runtime: PembaRuntime): Promise<Pemba> {
  const database = await runtime.openStore(settings.database, settings.databaseReadReplicas ?? []);
  let store = database;
  try {
    const budget =
      settings.replica === undefined || database.kind === "memory"
        ? undefined
        : new WorkingSetBudget(settings.replica.maxBytes);
    store = budget === undefined ? database : await withReplica(database, budget, settings, runtime);
    const lazy = store !== database && runtime.replica === "lazy";
    const service = new PembaService(store, {
      maxWatchStreams: settings.maxWatchStreams,
      maxCompiledSchemaBytes: settings.maxCompiledSchemaMb * 1048576,
      schemaWrites: settings.schemaWrites,
      schemaParser: runtime.schemaParser,
      // a lazy replica's looks at the database renew the cached head schema; the TTL is the fallback for tenants
      // it does not hold (and must outlast one refresh window, or each look would race a schema read)
      headSchemaTtlMs: lazy ? 2 * settings.replica!.freshnessMs + 1000 : undefined,
    });
    const app = createApp({
      service,
      auth: settings.auth,
      cors: settings.corsOrigins === undefined ? undefined : { origins: settings.corsOrigins },
      corsSetting: settingName("corsOrigins", runtime.name),
      publicPaths: settings.publicPaths,
      metrics: runtime.metrics,
      observe: runtime.observe,
      observability: runtime.observability,
      admit: runtime.admit,
      version: runtime.version,
      console: runtime.console,
      authzenTenant: settings.authzenTenant,
    });
    const scope = runtime.scope ?? (<T>(run: () => T) => run());
    const connect = runtime.connect ? createConnectFetchHandler(app, CONNECT_READ_MAX_BYTES) : undefined;
    // the table's non-streaming routes straight to the pipeline, the rest through Hono
    const routes = fetchRoutes(app);
    return {
      store,
      service,
      app,
      workingSet: budget,
      fetch:
        connect === undefined
          ? (request, env, ctx) => scope(() => routes(request) ?? app.fetch(request, env, ctx))
          : (request, env, ctx) =>
              scope(() => connect(request) ?? routes(request) ?? app.fetch(request, env, ctx)),
      gc: async () => {
        if (settings.gcWindowMs <= 0) return 0;
        return scope(async () => {
          // expired rows become deletes first; GC removes them once those are older than the window
          await service.sweepAllExpired();
          return store.gc(new Date(Date.now() - settings.gcWindowMs));
        });
      },
      close: async () => {
        service.watches.close();
        await runtime.schemaParser?.close?.();
        await store.close();
      },
    };
  } catch (error) {
    await store.close();
    throw error;
  }
}

/**
 * The replica in front of a SQL store, when the settings ask for one; tenants over several databases (a
 * ShardedStore) get one in front of each database, all within the one byte budget.
 */
async function withReplica(
  database: Store,
  budget: WorkingSetBudget,
  settings: PembaSettings,
  runtime: PembaRuntime,
): Promise<Store> {
  const replica = settings.replica!;
  const freshnessMs = replica.freshnessMs;
  const preload = replica.preload === true ? schemaPreloadKeys : undefined;
  if (runtime.replica === "lazy") {
    const lazy = (store: Store) =>
      ReplicaStore.lazy(store, {
        budget,
        freshnessMs,
        logger: runtime.logger,
        background: runtime.background,
        preload,
      });
    if (database instanceof ShardedStore) return database.withEach(lazy);
    return lazy(database);
  }
  return ReplicaStore.open(database, { budget, refreshMs: freshnessMs, logger: runtime.logger, preload });
}
