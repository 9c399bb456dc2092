/**
 * The Worker's configuration, from its environment (wrangler.toml `[vars]` and secrets). Same variable names and
 * rules as `pemba serve` (packages/node-server/src/config.ts), minus what a Worker has no use for (host, port,
 * log level): PEMBA_DATABASE (+ PEMBA_DATABASE_TOKEN), PEMBA_AUTH_KEYS or PEMBA_JWKS_URL + PEMBA_ISSUER +
 * PEMBA_AUDIENCE, PEMBA_CORS_ORIGINS, PEMBA_GC_WINDOW, PEMBA_REPLICA (+ PEMBA_REPLICA_MAX_ROWS,
 * PEMBA_REPLICA_REFRESH), PEMBA_MAX_WATCH_STREAMS, PEMBA_MAX_COMPILED_SCHEMA_MB. Imports nothing Node-only.
 */
import type { AuthConfig, PresharedKey } from "@pemba/core";
import { DEFAULT_MAX_WATCH_STREAMS } from "@pemba/core";

export const DEFAULT_WORKER_DATABASE = "memory:";
export const DEFAULT_GC_WINDOW = "24h";
/**
 * Rows (tuples + attributes) the isolate's replica holds at most. The copy takes 40-54 bytes per row of V8 heap and
 * ArrayBuffers (loadtest/replica-memory.ts: 200,000-800,000 rows of Permify's load-test data), so 1,000,000 rows
 * stay under ~55 MB, less than half of a Worker isolate's 128 MB.
 */
export const DEFAULT_WORKER_REPLICA_MAX_ROWS = 1_000_000;
export const DEFAULT_WORKER_REPLICA_REFRESH = "1s";
/**
 * MB of estimated heap for the compiled schema versions an isolate keeps: an eighth of the isolate's 128 MB, beside
 * the replica's ~55 MB at most (the Node server's default, 256, is more than an isolate has).
 */
export const DEFAULT_WORKER_MAX_COMPILED_SCHEMA_MB = 16;

/** The Worker's bindings; every value a string var or secret. */
export interface WorkerEnv {
  /**
   * `memory:` (default; state lives as long as the isolate), `d1:<BINDING>` (the D1 database bound as BINDING in
   * wrangler.toml `[[d1_databases]]`), or a `libsql:`/`https:`/`http:`/`wss:`/`ws:` URL.
   */
  PEMBA_DATABASE?: string;
  /** libSQL auth token (set it as a secret: `wrangler secret put PEMBA_DATABASE_TOKEN`). */
  PEMBA_DATABASE_TOKEN?: string;
  /** Preshared keys, comma separated; `key:t1|t2` limits a key to tenants t1 and t2. */
  PEMBA_AUTH_KEYS?: string;
  PEMBA_JWKS_URL?: string;
  PEMBA_AUDIENCE?: string;
  PEMBA_ISSUER?: string;
  /** Origins whose pages may call the API, comma separated; `*` = every origin, without credentials (default: same-origin only). */
  PEMBA_CORS_ORIGINS?: string;
  /** How long deleted data is kept (scheduled garbage collection), e.g. 30m, 24h, 7d; 0 disables GC. */
  PEMBA_GC_WINDOW?: string;
  /** `on` (default) or `off`: answer checks from an in-isolate replica of a D1/libSQL database. */
  PEMBA_REPLICA?: string;
  /** A tenant that would take the replica above this many rows is served by SQL (default 1000000). */
  PEMBA_REPLICA_MAX_ROWS?: string;
  /** A request looks for writes of other instances when the replica's last look is older than this (default 1s). */
  PEMBA_REPLICA_REFRESH?: string;
  /** Watch streams open at once in an isolate; one more is refused with ERROR_CODE_RATE_LIMITED (default 1000). */
  PEMBA_MAX_WATCH_STREAMS?: string;
  /** MB of estimated heap the isolate's compiled schema versions may take (default 16). */
  PEMBA_MAX_COMPILED_SCHEMA_MB?: string;
}

/** The in-isolate replica's settings (see ReplicaStore.lazy). */
export interface WorkerReplicaConfig {
  maxRows: number;
  freshnessMs: number;
}

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
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

export function resolveWorkerConfig(env: WorkerEnv): WorkerConfig {
  const get = (name: keyof WorkerEnv): string | undefined => {
    const value = env[name];
    return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
  };
  const database = get("PEMBA_DATABASE") ?? DEFAULT_WORKER_DATABASE;
  const driver = workerDriverFor(database);
  return {
    database,
    driver,
    ...(driver === "d1" ? { d1Binding: d1BindingName(database) } : {}),
    databaseToken: get("PEMBA_DATABASE_TOKEN"),
    auth: resolveAuth(
      get("PEMBA_AUTH_KEYS"),
      get("PEMBA_JWKS_URL"),
      get("PEMBA_AUDIENCE"),
      get("PEMBA_ISSUER"),
    ),
    corsOrigins: splitList(get("PEMBA_CORS_ORIGINS")),
    gcWindowMs: parseDuration(get("PEMBA_GC_WINDOW") ?? DEFAULT_GC_WINDOW),
    replica: driver === "memory" ? undefined : resolveReplica(get),
    maxWatchStreams: parseCount(
      "PEMBA_MAX_WATCH_STREAMS",
      get("PEMBA_MAX_WATCH_STREAMS"),
      DEFAULT_MAX_WATCH_STREAMS,
    ),
    maxCompiledSchemaMb: parseCount(
      "PEMBA_MAX_COMPILED_SCHEMA_MB",
      get("PEMBA_MAX_COMPILED_SCHEMA_MB"),
      DEFAULT_WORKER_MAX_COMPILED_SCHEMA_MB,
    ),
  };
}

function parseCount(name: keyof WorkerEnv, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const clean = text.replace(/_/g, "");
  if (!/^\d+$/.test(clean)) throw new ConfigError(`invalid ${name} "${text}"; expected a whole number`);
  return Number(clean);
}

function resolveReplica(get: (name: keyof WorkerEnv) => string | undefined): WorkerReplicaConfig | undefined {
  const mode = (get("PEMBA_REPLICA") ?? "on").toLowerCase();
  if (mode === "off") return undefined;
  if (mode !== "on") throw new ConfigError(`invalid PEMBA_REPLICA "${mode}"; use on or off`);
  const rows = get("PEMBA_REPLICA_MAX_ROWS");
  const maxRows = rows === undefined ? DEFAULT_WORKER_REPLICA_MAX_ROWS : Number(rows);
  if (!Number.isSafeInteger(maxRows) || maxRows < 0) {
    throw new ConfigError(`invalid PEMBA_REPLICA_MAX_ROWS "${rows}"; use a whole number of rows`);
  }
  const freshnessMs = parseDuration(
    get("PEMBA_REPLICA_REFRESH") ?? DEFAULT_WORKER_REPLICA_REFRESH,
    "PEMBA_REPLICA_REFRESH",
  );
  return { maxRows, freshnessMs };
}

/** A Worker has no file system: the in-isolate memory store, a D1 binding, or libSQL over HTTP/WebSockets. */
export function workerDriverFor(database: string): WorkerDriver {
  if (database === "memory:" || database.startsWith("memory:")) return "memory";
  if (database.startsWith("d1:")) return "d1";
  if (/^(libsql|https?|wss?):\/\//i.test(database)) return "libsql";
  throw new ConfigError(
    `PEMBA_DATABASE "${describeDatabase(database)}" is not supported on Workers; use "memory:", "d1:<BINDING>" ` +
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

function resolveAuth(
  keys: string | undefined,
  jwksUrl: string | undefined,
  audience: string | undefined,
  issuer: string | undefined,
): AuthConfig {
  if (keys !== undefined && jwksUrl !== undefined) {
    throw new ConfigError("PEMBA_AUTH_KEYS and PEMBA_JWKS_URL are mutually exclusive; choose one auth mode");
  }
  if (keys !== undefined) return { mode: "preshared", keys: parseAuthKeys(keys) };
  if (jwksUrl !== undefined) {
    try {
      new URL(jwksUrl);
    } catch {
      throw new ConfigError(`invalid PEMBA_JWKS_URL "${jwksUrl}"`);
    }
    if (audience === undefined || issuer === undefined) {
      throw new ConfigError(
        "PEMBA_JWKS_URL needs PEMBA_ISSUER and PEMBA_AUDIENCE (tokens are checked against both)",
      );
    }
    const audiences = splitList(audience) ?? [];
    return { mode: "oidc", jwksUrl, audience: audiences.length === 1 ? audiences[0] : audiences, issuer };
  }
  if (audience !== undefined || issuer !== undefined) {
    throw new ConfigError("PEMBA_AUDIENCE and PEMBA_ISSUER need PEMBA_JWKS_URL");
  }
  return { mode: "none" };
}

/** `k1,k2:t1|t2` -> [{key:"k1"}, {key:"k2", tenants:["t1","t2"]}]. */
export function parseAuthKeys(text: string): PresharedKey[] {
  const keys = splitList(text) ?? [];
  if (keys.length === 0) throw new ConfigError("PEMBA_AUTH_KEYS is empty");
  return keys.map((entry) => {
    const colon = entry.indexOf(":");
    if (colon < 0) return { key: entry };
    const key = entry.slice(0, colon);
    const tenants = entry
      .slice(colon + 1)
      .split("|")
      .map((t) => t.trim())
      .filter((t) => t !== "");
    if (key === "" || tenants.length === 0) throw new ConfigError("invalid PEMBA_AUTH_KEYS entry");
    return { key, tenants };
  });
}

function splitList(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `30m`, `24h`, `7d`, `1h30m`, or `0`. */
export function parseDuration(text: string, name = "PEMBA_GC_WINDOW"): number {
  if (text === "0") return 0;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) {
    throw new ConfigError(`invalid ${name} "${text}"; use e.g. 30m, 24h, 7d`);
  }
  return parts.reduce((sum, p) => sum + Number(p[1]) * DURATION_UNITS[p[2]], 0);
}

/** The database URL with any password or token hidden, for error messages. */
export function describeDatabase(database: string): string {
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
