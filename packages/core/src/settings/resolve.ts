/**
 * Settings from flags and environment (Node) or vars (Workers) through the one table (definition.ts). A flag wins
 * over its variable, which wins over the runtime's default; errors name the setting as the runtime spells it.
 */
import type { PublicPath } from "../http/app.ts";
import type { AuthConfig } from "../http/auth/index.ts";
import type { DecisionRedaction } from "../observe/decision-log.ts";
import type { SchemaWrites } from "../service/index.ts";
import {
  defaultText,
  type LogLevel,
  type Runtime,
  SETTINGS,
  type SettingDef,
  type SettingKey,
  type SettingValues,
  settingName,
  settingsOf,
} from "./definition.ts";
import { ConfigError, type D1Simulation, issueMessage } from "./parsers.ts";

/** `pemba serve`'s flags by name (without `--`): text, or true for a switch. */
export type Flags = Readonly<Record<string, string | boolean | undefined>>;
/** Environment variables or Worker vars (bindings that are no strings are ignored). */
export type Env = Readonly<Record<string, unknown>>;

/** The in-memory replica's settings; see ReplicaStore.open (Node) and ReplicaStore.lazy (Workers). */
export interface ReplicaSettings {
  /** Estimated bytes the working set holds at most; least recently used keys are evicted past it. */
  maxBytes: number;
  /** How old the copy may get before it looks for writes of other processes or instances (ms). */
  freshnessMs: number;
  /** Fill the working set with a followed tenant's rows in the background, within maxBytes (ReplicaOptions.preload). */
  preload?: boolean;
}

/** What createPemba needs of the settings, whichever runtime resolved them. */
export interface PembaSettings {
  database: string;
  /** Read replicas of the database (URLs, nearest first); none: every read at the primary. */
  databaseReadReplicas?: readonly string[];
  auth: AuthConfig;
  /** Allowed CORS origins ("*" = every origin, without credentials); undefined = same-origin only. */
  corsOrigins?: string[];
  /** With authentication on: the metadata paths served without a key or token. */
  publicPaths?: readonly PublicPath[];
  /** How long deleted rows (and the snap tokens that see them) are kept; 0 disables garbage collection. */
  gcWindowMs: number;
  /** Undefined: no replica. */
  replica?: ReplicaSettings;
  maxWatchStreams: number;
  maxCompiledSchemaMb: number;
  /** `safe`: a schema write that would orphan live rows is refused; default `permify`. */
  schemaWrites?: SchemaWrites;
  /** The tenant whose AuthZEN decision point is also served at the root paths. */
  authzenTenant?: string;
}

/** Traces and the decision log (README, Observability). */
export interface ObservabilitySettings {
  /** OTLP/HTTP base URL of the traces; undefined: the runtime's standard variables decide (none: no tracing). */
  otelEndpoint?: string;
  otelSampleRatio?: number;
  /** `stdout`, `otlp` or a file (Node), `console` (Worker); undefined: no decision log. */
  decisionLog?: string;
  decisionLogSampleRatio: number;
  decisionLogDenials: boolean;
  decisionLogRedact: DecisionRedaction[];
}

/** The settings both runtimes read, as flat values. */
interface CommonSettings extends ObservabilitySettings {
  database: string;
  databaseReadReplicas?: string[];
  auth: AuthConfig;
  corsOrigins?: string[];
  authzenTenant?: string;
  gcWindowMs: number;
  replica: boolean;
  replicaRefreshMs: number;
  replicaMemoryMb: number;
  replicaPreload: boolean;
  maxWatchStreams: number;
  maxCompiledSchemaMb: number;
  schemaWrites: SchemaWrites;
  logLevel: LogLevel;
}

export interface NodeSettings extends CommonSettings {
  host: string;
  port: number;
  /** 0: no gRPC port. */
  grpcPort: number;
  /** Both set: the gRPC port serves TLS with this certificate and key (PEM file paths). */
  grpcTls?: { certFile: string; keyFile: string };
  publicPaths: PublicPath[];
  /** Allow a non-loopback bind without authentication. */
  insecureBindAny: boolean;
  /** MB of write-request bodies after which the heap is compacted once the writes pause; 0 = never. */
  compactAfterWritesMb: number;
  /** Percent past the live heap V8's old space may grow before a full collection; 0 = V8's own rule. */
  heapGrowthPercent: number;
  /** PostgreSQL: the pool's most connections. */
  pgPoolSize: number;
  /** A decision log file's size (MB) before it rotates. */
  decisionLogMaxMb: number;
  /** Decision records waiting for the sink at most. */
  decisionLogBuffer: number;
  /** Event-loop lag (ms) from which new requests are shed; 0 = never. */
  shedLagMs: number;
  /** Requests answered at once before new ones are shed; 0 = no limit. */
  maxInFlight: number;
}

export interface WorkerSettings extends CommonSettings {
  databaseToken?: string;
  /** With several D1 databases: tenant id -> binding of the pinned tenants. */
  d1Tenants?: ReadonlyMap<string, string>;
  /** D1's latencies added around each D1 binding (benchmarks and tests); undefined: none. */
  d1Simulate?: D1Simulation;
  /** OTLP export headers (name -> value). */
  otelHeaders?: ReadonlyMap<string, string>;
}

/** The text given for a setting: its flag (Node), else its variable; blank counts as unset. */
function given(def: SettingDef, runtime: Runtime, flags: Flags, env: Env): string | undefined {
  if (runtime === "node" && def.flag !== undefined) {
    const flag = flags[def.flag];
    if (flag === true) return "on";
    if (typeof flag === "string") return flag;
  }
  const value = env[def.env];
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

/** One setting of `runtime` (e.g. `pemba migrate`'s database alone); a ConfigError naming it when invalid. */
export function resolveSetting<K extends SettingKey>(
  key: K,
  runtime: Runtime,
  flags: Flags,
  env: Env,
): SettingValues[K] {
  const def: SettingDef = SETTINGS[key];
  const raw = given(def, runtime, flags, env) ?? defaultText(def, runtime);
  const result = def.schema.safeParse(raw);
  if (result.success) return result.data as SettingValues[K];
  const message = result.error.issues[0]?.message ?? 'invalid {name} "{value}"';
  throw new ConfigError(issueMessage(message, settingName(key, runtime), raw ?? ""));
}

/** Every setting `runtime` reads. */
function parseAll(runtime: Runtime, flags: Flags, env: Env): SettingValues {
  const values: Partial<Record<SettingKey, unknown>> = {};
  for (const [key] of settingsOf(runtime)) values[key] = resolveSetting(key, runtime, flags, env);
  return values as SettingValues;
}

function common(v: SettingValues, runtime: Runtime): CommonSettings {
  return {
    database: v.database,
    // absent rather than undefined when unset, as authzenTenant
    ...(v.databaseReadReplicas === undefined || v.databaseReadReplicas.length === 0
      ? {}
      : { databaseReadReplicas: v.databaseReadReplicas }),
    auth: resolveAuth(v, runtime),
    corsOrigins: v.corsOrigins,
    // absent rather than undefined when unset: settings compare as they did before the setting existed
    ...(v.authzenTenant === undefined ? {} : { authzenTenant: v.authzenTenant }),
    gcWindowMs: v.gcWindow,
    replica: v.replica,
    replicaRefreshMs: v.replicaRefresh,
    replicaMemoryMb: v.replicaMemory,
    replicaPreload: v.replicaPreload,
    maxWatchStreams: v.maxWatchStreams,
    maxCompiledSchemaMb: v.maxCompiledSchemaMb,
    schemaWrites: v.schemaWrites,
    logLevel: v.logLevel,
    otelEndpoint: v.otelEndpoint,
    otelSampleRatio: v.otelSampleRatio,
    decisionLog: v.decisionLog,
    decisionLogSampleRatio: v.decisionLogSampleRatio,
    decisionLogDenials: v.decisionLogDenials,
    decisionLogRedact: v.decisionLogRedact,
  };
}

/** `pemba serve`'s settings: flags over PEMBA_* environment variables over the defaults. */
export function resolveNodeSettings(flags: Flags, env: Env): NodeSettings {
  const v = parseAll("node", flags, env);
  return {
    ...common(v, "node"),
    host: v.host,
    port: v.port,
    grpcPort: v.grpcPort,
    grpcTls: resolveGrpcTls(v),
    publicPaths: v.publicPaths,
    insecureBindAny: v.insecureBindAny,
    compactAfterWritesMb: v.compactAfterWrites,
    heapGrowthPercent: v.heapGrowth,
    pgPoolSize: v.pgPoolSize,
    decisionLogMaxMb: v.decisionLogMaxMb,
    decisionLogBuffer: v.decisionLogBuffer,
    shedLagMs: v.shedLagMs,
    maxInFlight: v.maxInFlight,
  };
}

/** The Worker's settings from its vars and secrets. */
export function resolveWorkerSettings(env: Env): WorkerSettings {
  const v = parseAll("worker", {}, env);
  return {
    ...common(v, "worker"),
    databaseToken: v.databaseToken,
    d1Tenants: v.d1Tenants,
    ...(v.d1Simulate === undefined ? {} : { d1Simulate: v.d1Simulate }),
    otelHeaders: v.otelHeaders,
  };
}

/**
 * The replica's settings of flat settings; undefined when it is off. `memoryPerEstimatedByte`: the memory the
 * runtime's process takes per estimated byte of entries (1: the budget counts the entries' estimate itself); the
 * entries then hold at most `replicaMemoryMb` MB divided by it, so the budget bounds what the working set adds to the
 * process, garbage and fragmentation included.
 */
export function replicaSettings(
  s: {
    replica: boolean;
    replicaMemoryMb: number;
    replicaRefreshMs: number;
    replicaPreload?: boolean;
  },
  memoryPerEstimatedByte = 1,
): ReplicaSettings | undefined {
  if (!s.replica) return undefined;
  const settings: ReplicaSettings = {
    maxBytes: Math.floor((s.replicaMemoryMb * 1048576) / memoryPerEstimatedByte),
    freshnessMs: s.replicaRefreshMs,
  };
  // absent rather than false when off: settings compare as they did before the option existed
  if (s.replicaPreload === true) settings.preload = true;
  return settings;
}

/** The gRPC port's TLS files: both or neither. */
function resolveGrpcTls(v: SettingValues): NodeSettings["grpcTls"] {
  const { grpcTlsCert: certFile, grpcTlsKey: keyFile } = v;
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) {
    throw new ConfigError(
      `${settingName("grpcTlsCert", "node")} and ${settingName("grpcTlsKey", "node")} go together (TLS needs both)`,
    );
  }
  return { certFile, keyFile };
}

/** One auth mode: preshared keys, or OIDC with its JWKS, issuer and audience, or none. */
function resolveAuth(v: SettingValues, runtime: Runtime): AuthConfig {
  const name = (key: SettingKey) => settingName(key, runtime);
  const { authKeys: keys, jwksUrl, audience, issuer } = v;
  if (keys !== undefined && jwksUrl !== undefined) {
    throw new ConfigError(
      `${name("authKeys")} and ${name("jwksUrl")} are mutually exclusive; choose one auth mode`,
    );
  }
  if (keys !== undefined) return { mode: "preshared", keys };
  if (jwksUrl !== undefined) {
    if (audience === undefined || issuer === undefined) {
      throw new ConfigError(
        `${name("jwksUrl")} needs ${name("issuer")} and ${name("audience")} (tokens are checked against both)`,
      );
    }
    return {
      mode: "oidc",
      jwksUrl,
      audience: audience.length === 1 ? audience[0]! : audience,
      issuer,
      requireExp: v.jwtRequireExp,
      clockToleranceSeconds: v.jwtClockTolerance / 1000,
    };
  }
  if (audience !== undefined || issuer !== undefined) {
    throw new ConfigError(`${name("audience")} and ${name("issuer")} need ${name("jwksUrl")}`);
  }
  return { mode: "none" };
}

/** The database URL with any password or token hidden; anything else as given. */
export function redactDatabaseUrl(database: string): string {
  try {
    const url = new URL(database);
    let masked = false;
    if (url.password) {
      url.password = "***";
      masked = true;
    }
    for (const key of [...url.searchParams.keys()]) {
      if (/token|password|secret/i.test(key)) {
        url.searchParams.set(key, "***");
        masked = true;
      }
    }
    return masked ? url.toString() : database;
  } catch {
    return database;
  }
}

/** The database for logs: a path as `sqlite:<path>`, a URL without its secrets. */
export function describeDatabase(database: string): string {
  return /^[a-z][a-z0-9+.-]*:/i.test(database) ? redactDatabaseUrl(database) : `sqlite:${database}`;
}
