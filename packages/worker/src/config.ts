/**
 * The Worker's configuration, from its vars and secrets (wrangler.toml `[vars]`, `wrangler secret put`), through
 * the settings @pemba/core defines for both runtimes (settings/definition.ts: names, defaults, parsers); the config
 * is those settings as resolved, so a new setting reaches the Worker without a line here. What only a Worker checks
 * stays here: the stores it can reach (no files, no TCP), the D1 bindings a database names and the tenants pinned
 * to them.
 * Imports nothing Node-only.
 */
import {
  ConfigError,
  type ReplicaSettings,
  redactDatabaseUrl,
  replicaSettings,
  resolveWorkerSettings,
  type WorkerSettings,
} from "@pemba/core";

export { ConfigError };

/** The Worker's bindings: PEMBA_* vars and secrets (strings), and the D1 databases a `d1:` database names. */
export type WorkerEnv = { readonly [name: `PEMBA_${string}`]: string | undefined };

/** The in-isolate replica's settings (see ReplicaStore.lazy). */
export type WorkerReplicaConfig = ReplicaSettings;

export type WorkerDriver = "memory" | "libsql" | "d1";

/** The replica's flat settings, which the config holds as one `replica` object. */
type FlatReplicaSettings = "replica" | "replicaRefreshMs" | "replicaMemoryMb" | "replicaPreload";

/**
 * The resolved settings (every setting of the one definition, as resolveWorkerSettings returns them) plus what the
 * Worker derives from them: the driver, the D1 bindings, and the replica's settings as one object.
 */
export interface WorkerConfig extends Omit<WorkerSettings, FlatReplicaSettings> {
  driver: WorkerDriver;
  /** The D1 bindings' names (driver "d1"): one, or several with tenants spread over them (the first listed first). */
  d1Bindings?: string[];
  /** Undefined: no replica (memory store, or PEMBA_REPLICA=off). */
  replica?: WorkerReplicaConfig;
}

export function resolveWorkerConfig(env: WorkerEnv): WorkerConfig {
  const settings = resolveWorkerSettings(env);
  const {
    replica: _on,
    replicaRefreshMs: _ms,
    replicaMemoryMb: _mb,
    replicaPreload: _pre,
    ...rest
  } = settings;
  const driver = workerDriverFor(settings.database);
  const d1Bindings = driver === "d1" ? d1BindingNames(settings.database) : undefined;
  checkD1Tenants(settings.d1Tenants, d1Bindings);
  checkReadReplicas(settings.databaseReadReplicas, driver);
  return {
    ...rest,
    driver,
    ...(d1Bindings === undefined ? {} : { d1Bindings }),
    replica: driver === "memory" ? undefined : replicaSettings(settings),
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

/** `d1:DB` -> [`DB`], `d1:DB,DB2` -> [`DB`, `DB2`]: binding names as wrangler accepts them (JavaScript identifiers). */
function d1BindingNames(database: string): string[] {
  const names = database
    .slice("d1:".length)
    .split(",")
    .map((n) => n.trim());
  for (const name of names) {
    if (!/^[A-Za-z_$][\w$]*$/.test(name)) {
      throw new ConfigError(
        `PEMBA_DATABASE "${database}": expected d1:<BINDING>, e.g. d1:DB, or d1:DB,DB2,DB3`,
      );
    }
  }
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined)
    throw new ConfigError(`PEMBA_DATABASE "${database}": binding ${twice} is listed twice`);
  return names;
}

/** Read replicas are libSQL servers' (sqld replicas), of a libSQL database. */
function checkReadReplicas(replicas: readonly string[] | undefined, driver: WorkerDriver): void {
  if (replicas === undefined) return;
  if (driver !== "libsql") {
    throw new ConfigError(
      "PEMBA_DATABASE_READ_REPLICAS needs a libSQL PEMBA_DATABASE (libsql://, https:// or wss://): D1 routes reads to its replicas itself",
    );
  }
  for (const url of replicas) {
    if (workerDriverFor(url) !== "libsql")
      throw new ConfigError(
        `PEMBA_DATABASE_READ_REPLICAS: ${redactDatabaseUrl(url)} is not a libsql://, https:// or wss:// URL`,
      );
  }
}

/** Pins name listed bindings, and only D1 databases have pins. */
function checkD1Tenants(pins: ReadonlyMap<string, string> | undefined, bindings: string[] | undefined): void {
  if (pins === undefined) return;
  if (bindings === undefined) {
    throw new ConfigError('PEMBA_D1_TENANTS needs D1 databases: PEMBA_DATABASE = "d1:DB,DB2,..."');
  }
  for (const [tenant, binding] of pins) {
    if (!bindings.includes(binding)) {
      throw new ConfigError(
        `PEMBA_D1_TENANTS pins tenant ${tenant} to ${binding}, which PEMBA_DATABASE does not list (${bindings.join(",")})`,
      );
    }
  }
}
