import { matchRoute, parsePresharedKeys } from "@pemba/core";
import { describe, expect, it } from "vitest";
import {
  assertSafeBind,
  ConfigError,
  describeDatabase,
  isLoopbackHost,
  parseDuration,
  resolveServeConfig,
} from "../src/config.ts";

const parseAuthKeys = (text: string) => parsePresharedKeys(text, "--auth-keys");

describe("serve configuration", () => {
  it("zero config: SQLite ./pemba.db on 127.0.0.1:3476 (gRPC 3478, cleartext), no auth, 24h GC window", () => {
    expect(resolveServeConfig({}, {})).toEqual({
      database: "./pemba.db",
      host: "127.0.0.1",
      port: 3476,
      grpcPort: 3478,
      grpcTls: undefined,
      auth: { mode: "none" },
      corsOrigins: undefined,
      publicPaths: [],
      gcWindowMs: 24 * 3_600_000,
      logLevel: "info",
      insecureBindAny: false,
      replica: true,
      replicaRefreshMs: 1000,
      replicaMemoryMb: 512,
      replicaPreload: false,
      compactAfterWritesMb: 32,
      heapGrowthPercent: 30,
      pgPoolSize: 10,
      shedLagMs: 0,
      maxInFlight: 2000,
      maxWatchStreams: 1000,
      maxCompiledSchemaMb: 256,
      schemaWrites: "permify",
      decisionLogSampleRatio: 1,
      decisionLogDenials: true,
      decisionLogRedact: [],
      decisionLogMaxMb: 100,
      decisionLogBuffer: 10_000,
    });
  });

  it("traces and the decision log: flags, variables, and their errors", () => {
    const config = resolveServeConfig(
      {
        "otel-endpoint": "http://127.0.0.1:4318",
        "decision-log": "stdout",
        "decision-log-redact": "subject-id",
      },
      { PEMBA_OTEL_SAMPLE_RATIO: "0.01", PEMBA_DECISION_LOG_DENIALS: "off" },
    );
    expect(config).toMatchObject({
      otelEndpoint: "http://127.0.0.1:4318",
      otelSampleRatio: 0.01,
      decisionLog: "stdout",
      decisionLogDenials: false,
      decisionLogRedact: ["subject-id"],
    });
    expect(() => resolveServeConfig({ "otel-sample-ratio": "1.5" }, {})).toThrow(
      new ConfigError('invalid --otel-sample-ratio "1.5"; expected a number from 0 to 1'),
    );
    expect(() => resolveServeConfig({ "decision-log-redact": "subject-id,email" }, {})).toThrow(
      new ConfigError('invalid --decision-log-redact entry "email"; expected some of subject-id, context'),
    );
  });

  it("the AuthZEN root tenant from flag or environment; a tenant id", () => {
    expect(resolveServeConfig({}, {}).authzenTenant).toBeUndefined();
    expect(resolveServeConfig({}, { PEMBA_AUTHZEN_TENANT: "acme" }).authzenTenant).toBe("acme");
    expect(
      resolveServeConfig({ "authzen-tenant": "t1" }, { PEMBA_AUTHZEN_TENANT: "acme" }).authzenTenant,
    ).toBe("t1");
    expect(() => resolveServeConfig({ "authzen-tenant": "a b" }, {})).toThrow(ConfigError);
  });

  it("gRPC port: 0 turns it off; TLS needs both the certificate and the key", () => {
    expect(resolveServeConfig({ "grpc-port": "0" }, {}).grpcPort).toBe(0);
    expect(resolveServeConfig({}, { PEMBA_GRPC_PORT: "50051" }).grpcPort).toBe(50051);
    expect(resolveServeConfig({ "grpc-tls-cert": "c.pem" }, { PEMBA_GRPC_TLS_KEY: "k.pem" }).grpcTls).toEqual(
      { certFile: "c.pem", keyFile: "k.pem" },
    );
    expect(() => resolveServeConfig({ "grpc-tls-cert": "c.pem" }, {})).toThrow(
      new ConfigError("--grpc-tls-cert and --grpc-tls-key go together (TLS needs both)"),
    );
  });

  it("PostgreSQL pool size from flag or environment; at least 1", () => {
    expect(resolveServeConfig({}, { PEMBA_PG_POOL_SIZE: "4" }).pgPoolSize).toBe(4);
    expect(resolveServeConfig({ "pg-pool-size": "32" }, { PEMBA_PG_POOL_SIZE: "4" }).pgPoolSize).toBe(32);
    expect(() => resolveServeConfig({ "pg-pool-size": "0" }, {})).toThrow(
      new ConfigError('invalid --pg-pool-size "0"; expected a whole number of at least 1'),
    );
  });

  it("watch stream cap and compiled schema budget from flags or environment", () => {
    const env = { PEMBA_MAX_WATCH_STREAMS: "50", PEMBA_MAX_COMPILED_SCHEMA_MB: "64" };
    expect(resolveServeConfig({}, env)).toMatchObject({ maxWatchStreams: 50, maxCompiledSchemaMb: 64 });
    expect(
      resolveServeConfig({ "max-watch-streams": "0", "max-compiled-schema-mb": "1_024" }, env),
    ).toMatchObject({ maxWatchStreams: 0, maxCompiledSchemaMb: 1024 });
    expect(() => resolveServeConfig({ "max-watch-streams": "many" }, {})).toThrow(
      new ConfigError('invalid --max-watch-streams "many"; expected a whole number'),
    );
    expect(() => resolveServeConfig({}, { PEMBA_MAX_COMPILED_SCHEMA_MB: "0.5" })).toThrow(
      new ConfigError('invalid --max-compiled-schema-mb "0.5"; expected a whole number'),
    );
  });

  it("replica options: on/off, refresh interval and memory budget from flags or environment", () => {
    expect(
      resolveServeConfig(
        {},
        { PEMBA_REPLICA: "off", PEMBA_REPLICA_REFRESH: "250ms", PEMBA_REPLICA_MEMORY: "1000" },
      ),
    ).toMatchObject({ replica: false, replicaRefreshMs: 250, replicaMemoryMb: 1000 });
    expect(
      resolveServeConfig(
        { replica: "on", "replica-refresh": "0", "replica-memory": "2_048" },
        { PEMBA_REPLICA: "off" },
      ),
    ).toMatchObject({ replica: true, replicaRefreshMs: 0, replicaMemoryMb: 2048 });
    expect(() => resolveServeConfig({ "public-paths": "/metrics,/v1" }, {})).toThrow(
      new ConfigError('invalid --public-paths entry "/v1"; expected some of /metrics, /openapi.json, /docs'),
    );
    expect(() => resolveServeConfig({ replica: "maybe" }, {})).toThrow(
      new ConfigError('invalid --replica "maybe"; expected on or off'),
    );
    expect(() => resolveServeConfig({ "replica-memory": "0" }, {})).toThrow(
      new ConfigError('invalid --replica-memory "0"; expected a whole number of at least 1'),
    );
  });

  it("heap compaction threshold from flag or environment; 0 disables", () => {
    expect(resolveServeConfig({}, { PEMBA_COMPACT_AFTER_WRITES: "0" }).compactAfterWritesMb).toBe(0);
    expect(
      resolveServeConfig({ "compact-after-writes": "128" }, { PEMBA_COMPACT_AFTER_WRITES: "0" })
        .compactAfterWritesMb,
    ).toBe(128);
    expect(() => resolveServeConfig({ "compact-after-writes": "1.5" }, {})).toThrow(
      new ConfigError('invalid --compact-after-writes "1.5"; expected a whole number'),
    );
  });

  it("the heap's growth past the live heap from flag or environment; 0 leaves V8's rule", () => {
    expect(resolveServeConfig({}, { PEMBA_HEAP_GROWTH: "0" }).heapGrowthPercent).toBe(0);
    expect(resolveServeConfig({ "heap-growth": "50" }, { PEMBA_HEAP_GROWTH: "0" }).heapGrowthPercent).toBe(
      50,
    );
    expect(() => resolveServeConfig({ "heap-growth": "-1" }, {})).toThrow(
      new ConfigError('invalid --heap-growth "-1"; expected a whole number'),
    );
  });

  it("environment variables apply, flags override them", () => {
    const env = {
      PEMBA_DATABASE: "postgres://u:p@db/pemba",
      PEMBA_HOST: "10.0.0.1",
      PEMBA_PORT: "8080",
      PEMBA_AUTH_KEYS: "k1",
      PEMBA_CORS_ORIGINS: "https://a.example, https://b.example",
      PEMBA_GC_WINDOW: "30m",
      PEMBA_LOG_LEVEL: "warn",
      PEMBA_PUBLIC_PATHS: "/metrics, /docs",
    };
    const fromEnv = resolveServeConfig({}, env);
    expect(fromEnv).toMatchObject({
      database: "postgres://u:p@db/pemba",
      host: "10.0.0.1",
      port: 8080,
      auth: { mode: "preshared", keys: [{ key: "k1" }] },
      corsOrigins: ["https://a.example", "https://b.example"],
      publicPaths: ["/metrics", "/docs"],
      gcWindowMs: 30 * 60_000,
      logLevel: "warn",
    });
    const flagged = resolveServeConfig({ port: "9090", database: "./x.db", "log-level": "debug" }, env);
    expect(flagged).toMatchObject({ port: 9090, database: "./x.db", logLevel: "debug", host: "10.0.0.1" });
  });

  it("auth keys: plain keys and tenant-limited keys", () => {
    expect(parseAuthKeys("admin, ci:t1|t2")).toEqual([
      { key: "admin" },
      { key: "ci", tenants: ["t1", "t2"] },
    ]);
    expect(() => parseAuthKeys(" , ")).toThrow(new ConfigError("--auth-keys is empty"));
    expect(() => parseAuthKeys("k:")).toThrow(
      new ConfigError("invalid --auth-keys entry; expected key or key:tenant1|tenant2"),
    );
  });

  it("OIDC: --jwks-url needs --issuer and --audience; audiences may be a list", () => {
    expect(
      resolveServeConfig(
        { "jwks-url": "https://id.example/jwks", issuer: "https://id.example", audience: "pemba" },
        {},
      ).auth,
    ).toEqual({
      mode: "oidc",
      jwksUrl: "https://id.example/jwks",
      issuer: "https://id.example",
      audience: "pemba",
      requireExp: true,
      clockToleranceSeconds: 5,
    });
    expect(
      resolveServeConfig(
        {
          "jwks-url": "https://id.example/jwks",
          issuer: "i",
          audience: "a",
          "jwt-require-exp": "off",
          "jwt-clock-tolerance": "30s",
        },
        {},
      ).auth,
    ).toMatchObject({ requireExp: false, clockToleranceSeconds: 30 });
    expect(
      resolveServeConfig({ "jwks-url": "https://id.example/jwks", issuer: "i", audience: "a,b" }, {}).auth,
    ).toMatchObject({ audience: ["a", "b"] });
    expect(() => resolveServeConfig({ "jwks-url": "https://id.example/jwks" }, {})).toThrow(
      "--jwks-url needs --issuer and --audience",
    );
    expect(() => resolveServeConfig({ "jwks-url": "nope", issuer: "i", audience: "a" }, {})).toThrow(
      'invalid --jwks-url "nope"',
    );
    expect(() => resolveServeConfig({ "auth-keys": "k", "jwks-url": "https://x/j" }, {})).toThrow(
      "mutually exclusive",
    );
    expect(() => resolveServeConfig({ issuer: "i" }, {})).toThrow("--audience and --issuer need --jwks-url");
  });

  it("rejects bad ports, durations and log levels", () => {
    expect(() => resolveServeConfig({ port: "70000" }, {})).toThrow('invalid --port "70000"');
    expect(() => resolveServeConfig({ port: "-1" }, {})).toThrow('invalid --port "-1"');
    expect(() => resolveServeConfig({ "gc-window": "soon" }, {})).toThrow('invalid --gc-window "soon"');
    expect(() => resolveServeConfig({ "log-level": "loud" }, {})).toThrow('invalid --log-level "loud"');
  });

  it("durations", () => {
    expect(parseDuration("0")).toBe(0);
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(parseDuration("7d")).toBe(7 * 86_400_000);
    expect(() => parseDuration("5 m")).toThrow(ConfigError);
  });

  it("loopback hosts", () => {
    for (const h of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"])
      expect(isLoopbackHost(h)).toBe(true);
    for (const h of ["0.0.0.0", "::", "10.0.0.1", "example.com", "128.0.0.1"])
      expect(isLoopbackHost(h)).toBe(false);
  });

  it("without auth only loopback binds are allowed, unless --insecure-bind-any", () => {
    const none = resolveServeConfig({ host: "0.0.0.0" }, {});
    expect(() => assertSafeBind(none)).toThrow("refusing to bind 0.0.0.0 without authentication");
    expect(() => assertSafeBind({ ...none, insecureBindAny: true })).not.toThrow();
    expect(() => assertSafeBind(resolveServeConfig({ host: "0.0.0.0", "auth-keys": "k" }, {}))).not.toThrow();
    expect(() => assertSafeBind(resolveServeConfig({}, {}))).not.toThrow();
    expect(resolveServeConfig({ host: "0.0.0.0" }, { PEMBA_INSECURE_BIND_ANY: "1" }).insecureBindAny).toBe(
      true,
    );
  });

  it("database descriptions hide credentials", () => {
    expect(describeDatabase("./pemba.db")).toBe("sqlite:./pemba.db");
    expect(describeDatabase("postgres://pemba:s3cret@db:5432/pemba")).toBe(
      "postgres://pemba:***@db:5432/pemba",
    );
    expect(describeDatabase("libsql://x.turso.io?authToken=abc")).toBe("libsql://x.turso.io?authToken=***");
  });

  it("log routes come from the core route table: tenant ids become :tenant_id", () => {
    const label = (method: string, path: string) => matchRoute(method, path)?.route.endpoint.route;
    expect(label("POST", "/v1/tenants/acme/permissions/check")).toBe(
      "/v1/tenants/:tenant_id/permissions/check",
    );
    expect(label("POST", "/v1/tenants/create")).toBe("/v1/tenants/create");
    expect(label("DELETE", "/v1/tenants/acme")).toBe("/v1/tenants/:id");
    expect(label("GET", "/healthz")).toBeUndefined(); // the app's own routes label themselves
  });
});
