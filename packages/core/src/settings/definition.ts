/**
 * Every PEMBA_* setting once: its variable, its `pemba serve` flag, the runtimes that read it, its default per
 * runtime, its parser and its help line. `pemba --help`, the READMEs' tables and wrangler.toml's vars are rendered
 * from or tested against this table (docs.ts, settings-docs.test.ts).
 */

import type { z } from "zod";
import { PUBLIC_PATH_CHOICES } from "../http/app.ts";
import { DEFAULT_CLOCK_TOLERANCE_SECONDS } from "../http/auth/oidc.ts";
import { DECISION_REDACTIONS, DEFAULT_DECISION_BUFFER } from "../observe/decision-log.ts";
import {
  DEFAULT_MAX_COMPILED_SCHEMA_BYTES,
  DEFAULT_MAX_WATCH_STREAMS,
  SCHEMA_WRITES,
} from "../service/index.ts";
import { DEFAULT_DATABASE } from "../store/default-database.ts";
import { tenantIdRegex } from "../wire/common.ts";
import {
  count,
  d1Simulation,
  duration,
  fromParser,
  list,
  oneOf,
  onOff,
  pairs,
  parsePresharedKeys,
  port,
  positiveCount,
  ratio,
  someOf,
  text,
  url,
} from "./parsers.ts";

export type Runtime = "node" | "worker";

const BOTH: readonly Runtime[] = ["node", "worker"];
const NODE: readonly Runtime[] = ["node"];
const WORKER: readonly Runtime[] = ["worker"];

/** Writes must pause this long before the Node server compacts the heap after a bulk load (heap.ts). */
export const COMPACT_IDLE_MS = 250;

/**
 * MB an isolate's working set holds at most (estimated from its rows' sizes): half of a Worker isolate's 128 MB,
 * beside the compiled schemas and a request's garbage.
 */
const WORKER_REPLICA_MEMORY_MB = 64;

/** MB the Node server's working set holds at most. */
const NODE_REPLICA_MEMORY_MB = 512;

/** An eighth of an isolate's 128 MB, beside the working set's 64 MB (Node's 256 is more than an isolate has). */
const WORKER_MAX_COMPILED_SCHEMA_MB = 16;

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Each level's number, as pino has them (the Node server's lines carry them; node-server's logging test holds the
 * two equal): a line is written when its number is at least the setting's.
 */
export const LOG_LEVEL_NUMBERS: Readonly<Record<LogLevel, number>> = {
  fatal: 60,
  error: 50,
  warn: 40,
  info: 30,
  debug: 20,
  trace: 10,
  silent: Number.POSITIVE_INFINITY,
};

export interface SettingDef {
  env: `PEMBA_${string}`;
  /** The `pemba serve` flag, without `--`. */
  flag?: string;
  /** The flag's argument in `--help`; none for a switch (`--insecure-bind-any`). */
  arg?: string;
  runtimes: readonly Runtime[];
  /** The text used when the setting is not given, parsed like given text; per runtime where they differ. */
  default?: string | Partial<Record<Runtime, string>>;
  /** What an unset setting without a default means, for the docs. */
  unset?: string;
  /** One line for `--help` and the READMEs; `{key}` is the name of another setting (flag or variable). */
  help: string | Partial<Record<Runtime, string>>;
  /** Parses the text; undefined in when unset and without a default. */
  schema: z.ZodType;
}

export const SETTINGS = {
  database: {
    env: "PEMBA_DATABASE",
    flag: "database",
    arg: "<path|url>",
    runtimes: BOTH,
    default: DEFAULT_DATABASE,
    help: {
      node: "SQLite file path, `file:`/`libsql:`/`https:` libSQL URL, `postgres://` URL, or `memory:` (in-process, lost on exit)",
      worker:
        "`d1:<BINDING>` (the D1 database bound as BINDING in wrangler.toml) or `d1:DB,DB2,DB3` (tenants over several D1 databases, each on one by `{d1Tenants}` or a hash of its id), `memory:` (in-isolate: each isolate has its own data, lost when it is evicted; for demos and tests) or a libSQL URL (`libsql://`, `https://`, `wss://`)",
    },
    schema: text,
  },
  databaseReadReplicas: {
    env: "PEMBA_DATABASE_READ_REPLICAS",
    flag: "database-read-replicas",
    arg: "<urls>",
    runtimes: BOTH,
    unset: "none (every read at the primary)",
    help: {
      node: "read replicas of a `postgres://` or libSQL server `{database}` (PostgreSQL hot standbys, sqld replicas), comma separated, nearest first: a read at a snap a replica has replayed (the tenant's head there) goes to it, any other read, every write and a read after a replica error to the primary; see Read replicas",
      worker:
        "libSQL replica URLs (sqld replicas of the libSQL `{database}`), comma separated, nearest first: a read at a snap a replica has replayed goes to it (a token it has not reached waits briefly, then goes to the primary), writes to the primary; `{databaseToken}` authenticates to them too; see Read replicas",
    },
    schema: list.optional(),
  },
  d1Tenants: {
    env: "PEMBA_D1_TENANTS",
    runtimes: WORKER,
    unset: "none",
    help: "with several D1 databases in `{database}`: tenants pinned to one, `tenant=BINDING` comma separated (e.g. `acme=DB2`); every other tenant lives where rendezvous hashing of its id puts it",
    schema: pairs.optional(),
  },
  d1Simulate: {
    env: "PEMBA_D1_SIMULATE",
    runtimes: WORKER,
    default: "off",
    help: "for benchmarks and tests under `wrangler dev`: each D1 round trip waits the latency of the D1 instance that would answer it on Cloudflare, by D1's routing rules, e.g. `replica=3ms,primary=100ms,lag=0-2s` (a write reaches the replicas after a lag drawn from that range; reads still read the one local database); `fail=0.2` makes that share of write round trips fail as D1 can (what they did is rolled back, the answer is D1's `Network connection lost`)",
    schema: d1Simulation,
  },
  databaseToken: {
    env: "PEMBA_DATABASE_TOKEN",
    runtimes: WORKER,
    unset: "none",
    help: "libSQL auth token (set it as a secret)",
    schema: text.optional(),
  },
  host: {
    env: "PEMBA_HOST",
    flag: "host",
    arg: "<host>",
    runtimes: NODE,
    default: "127.0.0.1",
    help: "address to bind; a non-loopback address needs authentication (or `{insecureBindAny}`)",
    schema: text,
  },
  port: {
    env: "PEMBA_PORT",
    flag: "port",
    arg: "<port>",
    runtimes: NODE,
    default: "3476",
    help: "port to listen on; 0 = any free port",
    schema: port,
  },
  grpcPort: {
    env: "PEMBA_GRPC_PORT",
    flag: "grpc-port",
    arg: "<port>",
    runtimes: NODE,
    default: "3478",
    help: "port of the gRPC API (Permify's base.v1 services, health and reflection), cleartext HTTP/2 unless `{grpcTlsCert}` is set; 0 = off",
    schema: port,
  },
  grpcTlsCert: {
    env: "PEMBA_GRPC_TLS_CERT",
    flag: "grpc-tls-cert",
    arg: "<file>",
    runtimes: NODE,
    unset: "none (cleartext)",
    help: "PEM certificate (chain) file: the gRPC port serves TLS; needs `{grpcTlsKey}`",
    schema: text.optional(),
  },
  grpcTlsKey: {
    env: "PEMBA_GRPC_TLS_KEY",
    flag: "grpc-tls-key",
    arg: "<file>",
    runtimes: NODE,
    unset: "none",
    help: "PEM private key file of `{grpcTlsCert}`",
    schema: text.optional(),
  },
  authKeys: {
    env: "PEMBA_AUTH_KEYS",
    flag: "auth-keys",
    arg: "<keys>",
    runtimes: BOTH,
    unset: "none",
    help: {
      node: "preshared keys, comma separated (`Authorization: Bearer <key>`); `key:t1|t2` limits a key to tenants t1 and t2",
      worker:
        "preshared keys, comma separated (`Authorization: Bearer <key>`); `key:t1|t2` limits a key to tenants t1 and t2 (set it as a secret)",
    },
    schema: fromParser(parsePresharedKeys).optional(),
  },
  jwksUrl: {
    env: "PEMBA_JWKS_URL",
    flag: "jwks-url",
    arg: "<url>",
    runtimes: BOTH,
    unset: "none",
    help: "verify Bearer JWTs (OIDC access tokens) against this JWKS; needs `{issuer}` and `{audience}`",
    schema: url.optional(),
  },
  issuer: {
    env: "PEMBA_ISSUER",
    flag: "issuer",
    arg: "<iss>",
    runtimes: BOTH,
    unset: "none",
    help: "the JWT issuer (`iss`) tokens must have, with `{jwksUrl}`",
    schema: text.optional(),
  },
  audience: {
    env: "PEMBA_AUDIENCE",
    flag: "audience",
    arg: "<aud>",
    runtimes: BOTH,
    unset: "none",
    help: "the JWT audience (`aud`) tokens must have, comma separated for several, with `{jwksUrl}`",
    schema: list.optional(),
  },
  jwtRequireExp: {
    env: "PEMBA_JWT_REQUIRE_EXP",
    flag: "jwt-require-exp",
    arg: "<on|off>",
    runtimes: BOTH,
    default: "on",
    help: "with `{jwksUrl}`: refuse a JWT without `exp` (401 `ERROR_CODE_INVALID_CLAIMS`); `off` accepts tokens that never expire",
    schema: onOff,
  },
  jwtClockTolerance: {
    env: "PEMBA_JWT_CLOCK_TOLERANCE",
    flag: "jwt-clock-tolerance",
    arg: "<duration>",
    runtimes: BOTH,
    default: `${DEFAULT_CLOCK_TOLERANCE_SECONDS}s`,
    help: "with `{jwksUrl}`: clock skew allowed on a JWT's `exp`, `nbf` and `iat` (a token issued further in the future is refused), e.g. 5s, 1m",
    schema: duration,
  },
  corsOrigins: {
    env: "PEMBA_CORS_ORIGINS",
    flag: "cors-origins",
    arg: "<origins>",
    runtimes: BOTH,
    unset: "same-origin only",
    help: "origins whose pages may call the API, comma separated; `*` = every origin, without credentials (Permify: all, with); other origins get 403",
    schema: list.optional(),
  },
  publicPaths: {
    env: "PEMBA_PUBLIC_PATHS",
    flag: "public-paths",
    arg: "<paths>",
    runtimes: NODE,
    unset: "none",
    help: `with \`{authKeys}\` or \`{jwksUrl}\`: serve these of \`${PUBLIC_PATH_CHOICES.join(",")}\` without a key or token (\`/healthz\` is always open)`,
    schema: someOf(PUBLIC_PATH_CHOICES)
      .optional()
      .transform((paths) => paths ?? []),
  },
  authzenTenant: {
    env: "PEMBA_AUTHZEN_TENANT",
    flag: "authzen-tenant",
    arg: "<tenant>",
    runtimes: BOTH,
    unset: "each tenant at `/v1/tenants/{tenant}/access/v1/...` only",
    help: "also serve this tenant's AuthZEN decision point at the root paths `/access/v1/...` and `/.well-known/authzen-configuration`, for clients that cannot put a prefix in the URL",
    schema: text.regex(tenantIdRegex, "a tenant id: letters, digits and _-@.:+").optional(),
  },
  gcWindow: {
    env: "PEMBA_GC_WINDOW",
    flag: "gc-window",
    arg: "<duration>",
    runtimes: BOTH,
    default: "24h",
    help: {
      node: "keep deleted rows (and the snap tokens that see them) this long, e.g. 30m, 24h, 7d; 0 = never collect",
      worker:
        "keep deleted rows (and the snap tokens that see them) this long, e.g. 30m, 24h, 7d; 0 = never collect; collection runs from the `scheduled` handler, so enable a cron under `[triggers]` in wrangler.toml",
    },
    schema: duration,
  },
  replica: {
    env: "PEMBA_REPLICA",
    flag: "replica",
    arg: "<on|off>",
    runtimes: BOTH,
    default: "on",
    help: {
      node: "answer checks and lookups from an in-memory replica of the SQL database: the working set of keys they read, filled on demand and kept exact through the change feed; `off` = SQL",
      worker:
        "answer checks and lookups from an in-isolate replica of a D1/libSQL database: the working set of keys they read, filled on demand and kept exact through the change feed; `off` = SQL",
    },
    schema: onOff,
  },
  replicaRefresh: {
    env: "PEMBA_REPLICA_REFRESH",
    flag: "replica-refresh",
    arg: "<duration>",
    runtimes: BOTH,
    default: "1s",
    help: {
      node: "how often the replica looks for writes of other processes, e.g. 500ms, 5s; 0 = never",
      worker:
        "the replica looks for writes of other instances after a request when its last look is older than this, before the request when older than twice this; 0 = before every request",
    },
    schema: duration,
  },
  replicaMemory: {
    env: "PEMBA_REPLICA_MEMORY",
    flag: "replica-memory",
    arg: "<MB>",
    runtimes: BOTH,
    default: { node: String(NODE_REPLICA_MEMORY_MB), worker: String(WORKER_REPLICA_MEMORY_MB) },
    help: {
      node: "MB of RSS the replica's working set may add to the server (over the same server and load with `--replica-memory 1`), full and evicting: the rows checks and lookups read, per key, hold at most half of it by their estimated sizes, the other half is left for the garbage and fragmentation V8 keeps while keys are evicted (measured at the default `--heap-growth`); least recently used keys are evicted past it, and read from SQL again when asked",
      worker:
        "MB (estimated from the rows' sizes) the isolate's working set holds at most, all D1 databases together: the rows checks and lookups read, per key; least recently used keys are evicted past it, and read from SQL again when asked",
    },
    schema: positiveCount,
  },
  replicaPreload: {
    env: "PEMBA_REPLICA_PRELOAD",
    flag: "replica-preload",
    arg: "<on|off>",
    runtimes: BOTH,
    default: "off",
    help: {
      node: "`on`: from a tenant's first request, fill the working set with the tenant's rows in the background (for small tenants): the check keys of every entity of the head schema's types and their attributes, a batch of ids per statement, a turn of the event loop between statements; it stops when the working set is full (its share of `--replica-memory`; later keys fill on demand); lookups' keys still fill on demand; `off` = keys fill on demand only",
      worker:
        "`on`: after a tenant's first request, fill the isolate's working set with the tenant's rows in the background (`ctx.waitUntil`, at most 50 D1 round trips per request, a timer turn before each): the check keys of every entity of the head schema's types and their attributes; it stops when the working set reaches PEMBA_REPLICA_MEMORY (later keys fill on demand), and D1 bills every row it reads; `off` = keys fill on demand only",
    },
    schema: onOff,
  },
  pgPoolSize: {
    env: "PEMBA_PG_POOL_SIZE",
    flag: "pg-pool-size",
    arg: "<n>",
    runtimes: NODE,
    default: "10",
    help: "PostgreSQL: connections this process's pool opens at most, each opened when a read or write needs it and kept open (plus 1 that listens for other instances' writes); see Running several instances",
    schema: positiveCount,
  },
  shedLagMs: {
    env: "PEMBA_SHED_LAG_MS",
    flag: "shed-lag-ms",
    arg: "<ms>",
    runtimes: NODE,
    default: "0",
    help: "overload: while the event loop runs this many ms behind (two samples 20 ms apart), new requests (but /healthz and /metrics) are answered at once with 429 `ERROR_CODE_RATE_LIMITED` and `Retry-After: 1` instead of queueing, gRPC calls (but health) with status RESOURCE_EXHAUSTED (e.g. 100); 0 = never shed",
    schema: count,
  },
  maxInFlight: {
    env: "PEMBA_MAX_IN_FLIGHT",
    flag: "max-in-flight",
    arg: "<n>",
    runtimes: NODE,
    default: "2000",
    help: "overload: requests and gRPC calls being answered at once; one more is answered with 429 `ERROR_CODE_RATE_LIMITED` and `Retry-After: 1` (a gRPC call: status RESOURCE_EXHAUSTED); 0 = no limit",
    schema: count,
  },
  compactAfterWrites: {
    env: "PEMBA_COMPACT_AFTER_WRITES",
    flag: "compact-after-writes",
    arg: "<MB>",
    runtimes: NODE,
    default: "32",
    help: `after this many MB of write requests, return the heap's free memory to the system once writes pause for ${COMPACT_IDLE_MS} ms (and every 2x that during a load without pauses); 0 = never`,
    schema: count,
  },
  heapGrowth: {
    env: "PEMBA_HEAP_GROWTH",
    flag: "heap-growth",
    arg: "<percent>",
    runtimes: NODE,
    default: "30",
    help: "how far V8's old space may grow past the live heap before a full collection, in percent of the live heap (V8's own rule lets it grow to several times the live heap under a load without pauses, so a busy server's RSS climbs for tens of minutes); 0 = V8's own rule",
    schema: count,
  },
  maxWatchStreams: {
    env: "PEMBA_MAX_WATCH_STREAMS",
    flag: "max-watch-streams",
    arg: "<n>",
    runtimes: BOTH,
    default: String(DEFAULT_MAX_WATCH_STREAMS),
    help: {
      node: "watch streams open at once; one more is refused with 429 `ERROR_CODE_RATE_LIMITED`; 0 = no watch",
      worker:
        "watch streams open at once in an isolate; one more is refused with 429 `ERROR_CODE_RATE_LIMITED`; 0 = no watch",
    },
    schema: count,
  },
  maxCompiledSchemaMb: {
    env: "PEMBA_MAX_COMPILED_SCHEMA_MB",
    flag: "max-compiled-schema-mb",
    arg: "<MB>",
    runtimes: BOTH,
    default: {
      node: String(DEFAULT_MAX_COMPILED_SCHEMA_BYTES / 1048576),
      worker: String(WORKER_MAX_COMPILED_SCHEMA_MB),
    },
    help: {
      node: "estimated MB of heap the compiled schema versions kept in memory may take; the least recently used are dropped (and compiled again when asked for)",
      worker:
        "estimated MB of the isolate's heap the compiled schema versions may take (an isolate has 128 MB); the least recently used are dropped (and compiled again when asked for)",
    },
    schema: count,
  },
  schemaWrites: {
    env: "PEMBA_SCHEMA_WRITES",
    flag: "schema-writes",
    arg: "<permify|safe>",
    runtimes: BOTH,
    default: "permify",
    help: "`safe`: refuse a schema write that would orphan stored rows (400, naming them); `permify`: any valid schema, as Permify",
    schema: oneOf(SCHEMA_WRITES),
  },
  logLevel: {
    env: "PEMBA_LOG_LEVEL",
    flag: "log-level",
    arg: "<level>",
    runtimes: BOTH,
    // The Worker logs failed requests only by default: a console.log in workerd costs more CPU than the check
    // itself, and Cloudflare's invocation logs already record
    // every request's URL, status and CPU time.
    default: { node: "info", worker: "warn" },
    help: {
      node: `${LOG_LEVELS.join("|")}: pino JSON logs on stdout, a line per request, written in batches (at most 50 ms late)`,
      worker: `${LOG_LEVELS.join("|")}: \`info\` and below: a JSON line per request on console.log (Workers Logs; see Request log; costs 0.7-1.0 ms of CPU per request); \`warn\`: lines for failed requests (status >= 400) and the replica's warnings only; \`error\`, \`fatal\`, \`silent\`: none`,
    },
    schema: oneOf(LOG_LEVELS),
  },
  otelEndpoint: {
    env: "PEMBA_OTEL_ENDPOINT",
    flag: "otel-endpoint",
    arg: "<url>",
    runtimes: BOTH,
    unset: "no tracing (Node: `OTEL_EXPORTER_OTLP_ENDPOINT` applies)",
    help: {
      node: "OpenTelemetry traces over OTLP/HTTP to this base URL (spans go to `<url>/v1/traces`; `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` and `OTEL_EXPORTER_OTLP_HEADERS` apply; the service name is `OTEL_SERVICE_NAME`, default `pemba`); see Observability",
      worker:
        "OpenTelemetry traces over OTLP/HTTP (JSON) to this base URL (spans go to `<url>/v1/traces`, sent after the response with `ctx.waitUntil`); `PEMBA_OTEL_HEADERS` adds headers (set it as a secret); see Observability",
    },
    schema: url.optional(),
  },
  otelSampleRatio: {
    env: "PEMBA_OTEL_SAMPLE_RATIO",
    flag: "otel-sample-ratio",
    arg: "<0-1>",
    runtimes: BOTH,
    unset: "1 (Node: `OTEL_TRACES_SAMPLER_ARG` applies)",
    help: "with `{otelEndpoint}`: the fraction of requests traced (by trace id); a request whose `traceparent` says sampled or not is traced as its caller decided",
    schema: ratio.optional(),
  },
  otelHeaders: {
    env: "PEMBA_OTEL_HEADERS",
    runtimes: WORKER,
    unset: "none",
    help: "with `{otelEndpoint}`: headers of the OTLP export, `name=value` comma separated (e.g. an API key; set it as a secret)",
    schema: pairs.optional(),
  },
  decisionLog: {
    env: "PEMBA_DECISION_LOG",
    flag: "decision-log",
    arg: "<stdout|otlp|file>",
    runtimes: BOTH,
    unset: "off",
    help: {
      node: "a record per decision (check, each bulk-check item, explain, lookups, subject permission): `stdout` or a file path (NDJSON; a file rotates at `{decisionLogMaxMb}`), or `otlp` (OpenTelemetry logs to `{otelEndpoint}`/v1/logs); see Decision log",
      worker:
        "`console`: a JSON line per decision (check, each bulk-check item, explain, lookups, subject permission) on console.log (Workers Logs), written after the response; see Decision log",
    },
    schema: text.optional(),
  },
  decisionLogSampleRatio: {
    env: "PEMBA_DECISION_LOG_SAMPLE_RATIO",
    flag: "decision-log-sample-ratio",
    arg: "<0-1>",
    runtimes: BOTH,
    default: "1",
    help: "with `{decisionLog}`: the fraction of decisions recorded (denials all, unless `{decisionLogDenials}` is off)",
    schema: ratio,
  },
  decisionLogDenials: {
    env: "PEMBA_DECISION_LOG_DENIALS",
    flag: "decision-log-denials",
    arg: "<on|off>",
    runtimes: BOTH,
    default: "on",
    help: "with `{decisionLog}`: record every denial whatever the sample ratio",
    schema: onOff,
  },
  decisionLogRedact: {
    env: "PEMBA_DECISION_LOG_REDACT",
    flag: "decision-log-redact",
    arg: "<fields>",
    runtimes: BOTH,
    unset: "none",
    help: `with \`{decisionLog}\`: some of \`${DECISION_REDACTIONS.join(",")}\`: \`subject-id\` writes the subject's id as \`sha256:<16 hex>\` (of the tenant and the id), \`context\` leaves the request's context out`,
    schema: someOf(DECISION_REDACTIONS)
      .optional()
      .transform((fields) => fields ?? []),
  },
  decisionLogMaxMb: {
    env: "PEMBA_DECISION_LOG_MAX_MB",
    flag: "decision-log-max-mb",
    arg: "<MB>",
    runtimes: NODE,
    default: "100",
    help: "a decision log file is renamed `<file>.1` (the older ones `.2` ... `.5`, the oldest removed) once it would pass this size",
    schema: positiveCount,
  },
  decisionLogBuffer: {
    env: "PEMBA_DECISION_LOG_BUFFER",
    flag: "decision-log-buffer",
    arg: "<n>",
    runtimes: NODE,
    default: String(DEFAULT_DECISION_BUFFER),
    help: "records waiting for the sink at most; past it records are dropped and counted in `pemba_decision_log_dropped_total` (a decision never waits)",
    schema: positiveCount,
  },
  insecureBindAny: {
    env: "PEMBA_INSECURE_BIND_ANY",
    flag: "insecure-bind-any",
    runtimes: NODE,
    default: "off",
    help: "allow a non-loopback bind without authentication",
    schema: onOff,
  },
} as const satisfies Record<string, SettingDef>;

export type SettingKey = keyof typeof SETTINGS;

/** The parsed value of each setting. */
export type SettingValues = { [K in SettingKey]: z.output<(typeof SETTINGS)[K]["schema"]> };

/** The setting as `runtime` spells it: a `pemba serve` flag on Node, a variable on Workers. */
export function settingName(key: SettingKey, runtime: Runtime): string {
  const def: SettingDef = SETTINGS[key];
  return runtime === "node" && def.flag !== undefined ? `--${def.flag}` : def.env;
}

/** The settings `runtime` reads, in table order. */
export function settingsOf(runtime: Runtime): [SettingKey, SettingDef][] {
  return (Object.entries(SETTINGS) as [SettingKey, SettingDef][]).filter(([, def]) =>
    def.runtimes.includes(runtime),
  );
}

/** The default's text for `runtime`; undefined when unset. */
export function defaultText(def: SettingDef, runtime: Runtime): string | undefined {
  return typeof def.default === "object" ? def.default[runtime] : def.default;
}

/** The help line for `runtime`, other settings named as it spells them. */
export function helpText(def: SettingDef, runtime: Runtime): string {
  const help = typeof def.help === "string" ? def.help : (def.help[runtime] ?? "");
  return help.replace(/\{(\w+)\}/g, (all, key: string) =>
    key in SETTINGS ? settingName(key as SettingKey, runtime) : all,
  );
}
