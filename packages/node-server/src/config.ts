/**
 * `pemba serve` configuration: command-line flags win over PEMBA_* environment variables, which win over the
 * zero-config defaults (SQLite file ./pemba.db on 127.0.0.1:3476, no auth).
 */
import { isIP } from "node:net";
import {
  DEFAULT_MAX_COMPILED_SCHEMA_BYTES,
  DEFAULT_MAX_WATCH_STREAMS,
  PUBLIC_PATH_CHOICES,
  type PublicPath,
} from "@pemba/core";

export const DEFAULT_DATABASE = "./pemba.db";
export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 3476;
export const DEFAULT_GC_WINDOW = "24h";
export const DEFAULT_REPLICA_REFRESH = "1s";
export const DEFAULT_REPLICA_MAX_ROWS = 5_000_000;
export const DEFAULT_COMPACT_AFTER_WRITES_MB = 32;
export const DEFAULT_MAX_COMPILED_SCHEMA_MB = DEFAULT_MAX_COMPILED_SCHEMA_BYTES / 1048576;
export { DEFAULT_MAX_WATCH_STREAMS };
/** Writes must pause this long before the heap is compacted after a bulk load (see heap.ts). */
export const COMPACT_IDLE_MS = 250;

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
const LOG_LEVELS: LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** One preshared key; `tenants` undefined = every tenant. */
export interface PresharedKey {
  key: string;
  tenants?: string[];
}

export type AuthConfig =
  | { mode: "none" }
  | { mode: "preshared"; keys: PresharedKey[] }
  | { mode: "oidc"; jwksUrl: string; audience: string | string[]; issuer: string };

export interface ServeConfig {
  database: string;
  host: string;
  port: number;
  auth: AuthConfig;
  /** Allowed CORS origins ("*" = every origin, without credentials); undefined = same-origin only. */
  corsOrigins?: string[];
  /** With authentication on: the metadata paths served without a key or token (default none). */
  publicPaths: PublicPath[];
  /** How long deleted rows (and the snap tokens that see them) are kept; 0 disables garbage collection. */
  gcWindowMs: number;
  logLevel: LogLevel;
  /** Allow a non-loopback bind without authentication. */
  insecureBindAny: boolean;
  /** Serve engine reads from an in-memory replica of the SQL store (ignored for memory:). */
  replica: boolean;
  /** How often the replica polls the database for writes of other processes; 0 = never. */
  replicaRefreshMs: number;
  /** Above this many rows (tuples + attributes) at startup, run without the replica. */
  replicaMaxRows: number;
  /** MB of write-request bodies after which the heap is compacted once the writes pause; 0 = never. */
  compactAfterWritesMb: number;
  /** Watch streams open at once; one more is refused with ERROR_CODE_RATE_LIMITED. */
  maxWatchStreams: number;
  /** MB (MiB) of estimated heap the compiled schema versions kept in memory may take. */
  maxCompiledSchemaMb: number;
}

/** Flag name -> environment variable; the single source for parsing and for `--help`. */
export const SERVE_OPTIONS = {
  database: {
    env: "PEMBA_DATABASE",
    arg: "<path|url>",
    help: `SQLite file path, libsql:/https:/file: URL, or postgres:// URL (default ${DEFAULT_DATABASE})`,
  },
  host: { env: "PEMBA_HOST", arg: "<host>", help: `address to bind (default ${DEFAULT_HOST})` },
  port: {
    env: "PEMBA_PORT",
    arg: "<port>",
    help: `port to listen on, 0 = any free port (default ${DEFAULT_PORT})`,
  },
  "auth-keys": {
    env: "PEMBA_AUTH_KEYS",
    arg: "<keys>",
    help: "preshared keys, comma separated; `key:t1|t2` limits a key to tenants t1 and t2",
  },
  "jwks-url": {
    env: "PEMBA_JWKS_URL",
    arg: "<url>",
    help: "verify Bearer JWTs (OIDC access tokens) against this JWKS; needs --issuer and --audience",
  },
  audience: {
    env: "PEMBA_AUDIENCE",
    arg: "<aud>",
    help: "required JWT audience, comma separated for several (with --jwks-url)",
  },
  issuer: { env: "PEMBA_ISSUER", arg: "<iss>", help: "required JWT issuer (with --jwks-url)" },
  "cors-origins": {
    env: "PEMBA_CORS_ORIGINS",
    arg: "<origins>",
    help: "origins whose pages may call the API, comma separated; * = every origin, without credentials (default: same-origin only)",
  },
  "public-paths": {
    env: "PEMBA_PUBLIC_PATHS",
    arg: "<paths>",
    help: `with --auth-keys or --jwks-url, serve these without a key or token: ${PUBLIC_PATH_CHOICES.join(",")} (default: none; /healthz is always open)`,
  },
  "gc-window": {
    env: "PEMBA_GC_WINDOW",
    arg: "<duration>",
    help: `keep deleted data this long, e.g. 30m, 24h, 7d; 0 disables GC (default ${DEFAULT_GC_WINDOW})`,
  },
  replica: {
    env: "PEMBA_REPLICA",
    arg: "<on|off>",
    help: "answer checks from an in-memory replica of the SQL database, kept up to date through its change feed (default on)",
  },
  "replica-refresh": {
    env: "PEMBA_REPLICA_REFRESH",
    arg: "<duration>",
    help: `how often the replica looks for writes made by other processes, e.g. 500ms, 5s; 0 = never (default ${DEFAULT_REPLICA_REFRESH})`,
  },
  "replica-max-rows": {
    env: "PEMBA_REPLICA_MAX_ROWS",
    arg: "<n>",
    help: `run without the replica when the database holds more rows than this at startup (default ${DEFAULT_REPLICA_MAX_ROWS})`,
  },
  "compact-after-writes": {
    env: "PEMBA_COMPACT_AFTER_WRITES",
    arg: "<MB>",
    help: `after this many MB of write requests, return the heap's free memory to the system once writes pause for ${COMPACT_IDLE_MS} ms; 0 = never (default ${DEFAULT_COMPACT_AFTER_WRITES_MB})`,
  },
  "max-watch-streams": {
    env: "PEMBA_MAX_WATCH_STREAMS",
    arg: "<n>",
    help: `watch streams open at once; one more is refused with ERROR_CODE_RATE_LIMITED, 0 = no watch (default ${DEFAULT_MAX_WATCH_STREAMS})`,
  },
  "max-compiled-schema-mb": {
    env: "PEMBA_MAX_COMPILED_SCHEMA_MB",
    arg: "<MB>",
    help: `estimated MB of heap the compiled schema versions kept in memory may take; the least recently used go first (default ${DEFAULT_MAX_COMPILED_SCHEMA_MB})`,
  },
  "log-level": {
    env: "PEMBA_LOG_LEVEL",
    arg: "<level>",
    help: `${LOG_LEVELS.join("|")} (default info)`,
  },
} as const;

export type ServeOptionName = keyof typeof SERVE_OPTIONS;
export type RawServeOptions = Partial<Record<ServeOptionName, string>> & { "insecure-bind-any"?: boolean };

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Merges flags over env vars and validates every value. */
export function resolveServeConfig(
  flags: RawServeOptions,
  env: NodeJS.ProcessEnv = process.env,
): ServeConfig {
  const get = (name: ServeOptionName): string | undefined => {
    const flag = flags[name];
    if (flag !== undefined) return flag;
    const fromEnv = env[SERVE_OPTIONS[name].env];
    return fromEnv === undefined || fromEnv === "" ? undefined : fromEnv;
  };
  const count = (name: ServeOptionName, fallback: number) =>
    parseCount(`--${name}`, get(name) ?? String(fallback));
  const port = parsePort(get("port") ?? String(DEFAULT_PORT));
  const logLevel = (get("log-level") ?? "info") as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`invalid log level "${logLevel}"; expected one of ${LOG_LEVELS.join(", ")}`);
  }
  const insecureEnv = env.PEMBA_INSECURE_BIND_ANY;
  return {
    database: get("database") ?? DEFAULT_DATABASE,
    host: get("host") ?? DEFAULT_HOST,
    port,
    auth: resolveAuth(get("auth-keys"), get("jwks-url"), get("audience"), get("issuer")),
    corsOrigins: splitList(get("cors-origins")),
    publicPaths: parsePublicPaths(get("public-paths")),
    gcWindowMs: parseDuration(get("gc-window") ?? DEFAULT_GC_WINDOW),
    logLevel,
    insecureBindAny: flags["insecure-bind-any"] === true || insecureEnv === "1" || insecureEnv === "true",
    replica: parseSwitch("--replica", get("replica") ?? "on"),
    replicaRefreshMs: parseDuration(get("replica-refresh") ?? DEFAULT_REPLICA_REFRESH),
    replicaMaxRows: count("replica-max-rows", DEFAULT_REPLICA_MAX_ROWS),
    compactAfterWritesMb: count("compact-after-writes", DEFAULT_COMPACT_AFTER_WRITES_MB),
    maxWatchStreams: count("max-watch-streams", DEFAULT_MAX_WATCH_STREAMS),
    maxCompiledSchemaMb: count("max-compiled-schema-mb", DEFAULT_MAX_COMPILED_SCHEMA_MB),
  };
}

function parsePublicPaths(text: string | undefined): PublicPath[] {
  const paths = splitList(text) ?? [];
  for (const path of paths) {
    if (!(PUBLIC_PATH_CHOICES as readonly string[]).includes(path)) {
      throw new ConfigError(
        `invalid --public-paths entry "${path}"; expected some of ${PUBLIC_PATH_CHOICES.join(", ")}`,
      );
    }
  }
  return paths as PublicPath[];
}

function parseSwitch(flag: string, text: string): boolean {
  if (text === "on" || text === "true" || text === "1") return true;
  if (text === "off" || text === "false" || text === "0") return false;
  throw new ConfigError(`invalid ${flag} "${text}"; expected on or off`);
}

function parseCount(flag: string, text: string): number {
  const clean = text.replace(/_/g, "");
  if (!/^\d+$/.test(clean)) throw new ConfigError(`invalid ${flag} "${text}"; expected a whole number`);
  return Number(clean);
}

function resolveAuth(
  keys: string | undefined,
  jwksUrl: string | undefined,
  audience: string | undefined,
  issuer: string | undefined,
): AuthConfig {
  if (keys !== undefined && jwksUrl !== undefined) {
    throw new ConfigError("--auth-keys and --jwks-url are mutually exclusive; choose one auth mode");
  }
  if (keys !== undefined) return { mode: "preshared", keys: parseAuthKeys(keys) };
  if (jwksUrl !== undefined) {
    try {
      new URL(jwksUrl);
    } catch {
      throw new ConfigError(`invalid --jwks-url "${jwksUrl}"`);
    }
    if (audience === undefined || issuer === undefined) {
      throw new ConfigError("--jwks-url needs --issuer and --audience (tokens are checked against both)");
    }
    const audiences = splitList(audience) ?? [];
    return { mode: "oidc", jwksUrl, audience: audiences.length === 1 ? audiences[0] : audiences, issuer };
  }
  if (audience !== undefined || issuer !== undefined) {
    throw new ConfigError("--audience and --issuer need --jwks-url");
  }
  return { mode: "none" };
}

/** `k1,k2:t1|t2` -> [{key:"k1"}, {key:"k2", tenants:["t1","t2"]}]. */
export function parseAuthKeys(text: string): PresharedKey[] {
  const keys = splitList(text) ?? [];
  if (keys.length === 0) throw new ConfigError("--auth-keys is empty");
  return keys.map((entry) => {
    const colon = entry.indexOf(":");
    if (colon < 0) return { key: entry };
    const key = entry.slice(0, colon);
    const tenants = entry
      .slice(colon + 1)
      .split("|")
      .map((t) => t.trim())
      .filter((t) => t !== "");
    if (key === "" || tenants.length === 0) throw new ConfigError(`invalid auth key entry "${entry}"`);
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

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw new ConfigError(`invalid port "${text}"`);
  return port;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `30m`, `24h`, `7d`, `1h30m`, or `0`. */
export function parseDuration(text: string): number {
  if (text === "0") return 0;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) {
    throw new ConfigError(`invalid duration "${text}"; use e.g. 30m, 24h, 7d`);
  }
  return parts.reduce((sum, p) => sum + Number(p[1]) * DURATION_UNITS[p[2]], 0);
}

export function isLoopbackHost(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  const bare = host.replace(/^\[|\]$/g, "");
  return bare === "::1" || bare === "::ffff:127.0.0.1";
}

/** Without authentication anyone who can reach the port can read and write everything. */
export function assertSafeBind(config: ServeConfig): void {
  if (config.auth.mode !== "none" || config.insecureBindAny || isLoopbackHost(config.host)) return;
  throw new ConfigError(
    `refusing to bind ${config.host} without authentication: anyone who can reach it could read and write ` +
      "all data. Set --auth-keys or --jwks-url, bind 127.0.0.1, or pass --insecure-bind-any if you really mean it.",
  );
}

/** The database URL with any password hidden, for logs. */
export function describeDatabase(database: string): string {
  if (!/^[a-z][a-z0-9+.-]*:/i.test(database)) return `sqlite:${database}`;
  try {
    const url = new URL(database);
    if (url.password) url.password = "***";
    for (const key of [...url.searchParams.keys()]) {
      if (/token|password|secret/i.test(key)) url.searchParams.set(key, "***");
    }
    return url.toString();
  } catch {
    return database;
  }
}
