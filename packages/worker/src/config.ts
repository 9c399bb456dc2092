/**
 * The Worker's configuration, from its vars and secrets (wrangler.toml `[vars]`, `wrangler secret put`), through
 * the settings @pemba/core defines for both runtimes (settings/definition.ts: names, defaults, parsers). What only a
 * Worker checks stays here: the stores it can reach (no files, no TCP) and the D1 binding a database names.
 * Imports nothing Node-only.
 */
import {
  type AuthConfig,
  ConfigError,
  type ReplicaSettings,
  redactDatabaseUrl,
  replicaSettings,
  resolveWorkerSettings,
  type SchemaWrites,
} from "@pemba/core";

export { ConfigError };

/** The Worker's bindings: PEMBA_* vars and secrets (strings), and the D1 databases a `d1:` database names. */
export type WorkerEnv = { readonly [name: `PEMBA_${string}`]: string | undefined };

/** The in-isolate replica's settings (see ReplicaStore.lazy). */
export type WorkerReplicaConfig = ReplicaSettings;

export type WorkerDriver = "memory" | "libsql" | "d1";

export interface WorkerConfig {
  database: string;
  driver: WorkerDriver;
  /** The D1 binding's name (driver "d1"). */
  d1Binding?: string;
  databaseToken?: string;
  auth: AuthConfig;
  corsOrigins?: string[];
  gcWindowMs: number;
  /** Undefined: no replica (memory store, or PEMBA_REPLICA=off). */
  replica?: WorkerReplicaConfig;
  maxWatchStreams: number;
  maxCompiledSchemaMb: number;
  schemaWrites: SchemaWrites;
}

export function resolveWorkerConfig(env: WorkerEnv): WorkerConfig {
  const settings = resolveWorkerSettings(env);
  const { database } = settings;
  const driver = workerDriverFor(database);
  return {
    database,
    driver,
    ...(driver === "d1" ? { d1Binding: d1BindingName(database) } : {}),
    databaseToken: settings.databaseToken,
    auth: settings.auth,
    corsOrigins: settings.corsOrigins,
    gcWindowMs: settings.gcWindowMs,
    replica: driver === "memory" ? undefined : replicaSettings(settings),
    maxWatchStreams: settings.maxWatchStreams,
    maxCompiledSchemaMb: settings.maxCompiledSchemaMb,
    schemaWrites: settings.schemaWrites,
  };
}

/** A Worker has no file system: the in-isolate memory store, a D1 binding, or libSQL over HTTP/WebSockets. */
export function workerDriverFor(database: string): WorkerDriver {
  if (database === "memory:" || database.startsWith("memory:")) return "memory";
  if (database.startsWith("d1:")) return "d1";
  if (/^(libsql|https?|wss?):\/\//i.test(database)) return "libsql";
  throw new ConfigError(
    `PEMBA_DATABASE "${redactDatabaseUrl(database)}" is not supported on Workers; use "memory:", "d1:<BINDING>" ` +
      "(a D1 database binding) or a libsql://, https:// (or wss://) URL of a libSQL server",
  );
}

/** `d1:DB` -> `DB`: a binding name as wrangler accepts it (a JavaScript identifier). */
function d1BindingName(database: string): string {
  const name = database.slice("d1:".length);
  if (!/^[A-Za-z_$][\w$]*$/.test(name)) {
    throw new ConfigError(`PEMBA_DATABASE "${database}": expected d1:<BINDING>, e.g. d1:DB`);
  }
  return name;
}
