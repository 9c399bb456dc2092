/** The Worker's env parsing (plain unit tests, no workerd). */
import { describe, expect, it } from "vitest";
import { ConfigError, resolveWorkerConfig } from "../src/config.ts";

/** Traces and the decision log as an unset env leaves them: off. */
const OBSERVABILITY_OFF = {
  otelEndpoint: undefined,
  otelSampleRatio: undefined,
  otelHeaders: undefined,
  decisionLog: undefined,
  decisionLogSampleRatio: 1,
  decisionLogDenials: true,
  decisionLogRedact: [],
};

describe("resolveWorkerConfig", () => {
  it("defaults: memory store, no auth, same-origin only, 24h GC window", () => {
    // every resolved setting, with the replica's flat settings as one object (none for memory:)
    expect(resolveWorkerConfig({})).toStrictEqual({
      database: "memory:",
      driver: "memory",
      databaseToken: undefined,
      d1Tenants: undefined,
      replica: undefined,
      auth: { mode: "none" },
      corsOrigins: undefined,
      gcWindowMs: 86_400_000,
      maxWatchStreams: 1000,
      maxCompiledSchemaMb: 16,
      schemaWrites: "permify",
      logLevel: "warn",
      ...OBSERVABILITY_OFF,
    });
  });

  it("the request log's level from PEMBA_LOG_LEVEL (warn by default: failed requests only)", () => {
    expect(resolveWorkerConfig({}).logLevel).toBe("warn");
    expect(resolveWorkerConfig({ PEMBA_LOG_LEVEL: "info" }).logLevel).toBe("info");
    expect(resolveWorkerConfig({ PEMBA_LOG_LEVEL: "warn" }).logLevel).toBe("warn");
    expect(resolveWorkerConfig({ PEMBA_LOG_LEVEL: "silent" }).logLevel).toBe("silent");
    expect(() => resolveWorkerConfig({ PEMBA_LOG_LEVEL: "loud" })).toThrow(
      new ConfigError(
        'invalid PEMBA_LOG_LEVEL "loud"; expected one of fatal, error, warn, info, debug, trace, silent',
      ),
    );
  });

  it("watch stream cap and compiled schema budget from vars", () => {
    expect(
      resolveWorkerConfig({ PEMBA_MAX_WATCH_STREAMS: "10", PEMBA_MAX_COMPILED_SCHEMA_MB: "4" }),
    ).toMatchObject({ maxWatchStreams: 10, maxCompiledSchemaMb: 4 });
    expect(() => resolveWorkerConfig({ PEMBA_MAX_WATCH_STREAMS: "-1" })).toThrow(
      new ConfigError('invalid PEMBA_MAX_WATCH_STREAMS "-1"; expected a whole number'),
    );
    expect(() => resolveWorkerConfig({ PEMBA_MAX_COMPILED_SCHEMA_MB: "lots" })).toThrow(
      new ConfigError('invalid PEMBA_MAX_COMPILED_SCHEMA_MB "lots"; expected a whole number'),
    );
  });

  it("libSQL URL + token, preshared keys, CORS origins, GC window", () => {
    expect(
      resolveWorkerConfig({
        PEMBA_DATABASE: "libsql://db-org.turso.io",
        PEMBA_DATABASE_TOKEN: "tok",
        PEMBA_AUTH_KEYS: "admin, k2:t1|t2",
        PEMBA_CORS_ORIGINS: "https://a.example, https://b.example",
        PEMBA_GC_WINDOW: "1h30m",
      }),
    ).toStrictEqual({
      database: "libsql://db-org.turso.io",
      driver: "libsql",
      databaseToken: "tok",
      d1Tenants: undefined,
      auth: { mode: "preshared", keys: [{ key: "admin" }, { key: "k2", tenants: ["t1", "t2"] }] },
      corsOrigins: ["https://a.example", "https://b.example"],
      gcWindowMs: 5_400_000,
      replica: { freshnessMs: 1000, maxBytes: 64 * 1048576 },
      maxWatchStreams: 1000,
      maxCompiledSchemaMb: 16,
      schemaWrites: "permify",
      logLevel: "warn",
      ...OBSERVABILITY_OFF,
    });
    expect(resolveWorkerConfig({ PEMBA_DATABASE: "https://db.example" }).driver).toBe("libsql");
  });

  it("the in-isolate replica: on by default for SQL databases, sized and timed by vars, or off", () => {
    expect(resolveWorkerConfig({ PEMBA_DATABASE: "d1:DB" }).replica).toEqual({
      freshnessMs: 1000,
      maxBytes: 64 * 1048576,
    });
    expect(
      resolveWorkerConfig({
        PEMBA_DATABASE: "d1:DB",
        PEMBA_REPLICA_REFRESH: "250ms",
        PEMBA_REPLICA_MEMORY: "24",
      }).replica,
    ).toEqual({ freshnessMs: 250, maxBytes: 24 * 1048576 });
    expect(resolveWorkerConfig({ PEMBA_DATABASE: "d1:DB", PEMBA_REPLICA: "off" }).replica).toBeUndefined();
    expect(resolveWorkerConfig({ PEMBA_REPLICA: "on" }).replica).toBeUndefined(); // memory: nothing to copy
    expect(() => resolveWorkerConfig({ PEMBA_DATABASE: "d1:DB", PEMBA_REPLICA: "yes" })).toThrow(
      'invalid PEMBA_REPLICA "yes"; expected on or off',
    );
    expect(() => resolveWorkerConfig({ PEMBA_DATABASE: "d1:DB", PEMBA_REPLICA_MEMORY: "1e6x" })).toThrow(
      'invalid PEMBA_REPLICA_MEMORY "1e6x"; expected a whole number of at least 1',
    );
    expect(() => resolveWorkerConfig({ PEMBA_DATABASE: "d1:DB", PEMBA_REPLICA_REFRESH: "soon" })).toThrow(
      'invalid PEMBA_REPLICA_REFRESH "soon"; use e.g. 30m, 24h, 7d',
    );
  });

  it("d1:<BINDING> selects the D1 database bound under that name", () => {
    expect(resolveWorkerConfig({ PEMBA_DATABASE: "d1:DB" })).toMatchObject({
      database: "d1:DB",
      driver: "d1",
      d1Bindings: ["DB"],
    });
    expect(resolveWorkerConfig({ PEMBA_DATABASE: "memory:" })).not.toHaveProperty("d1Bindings");
  });

  it("d1:DB,DB2,DB3 spreads tenants over several D1 databases; PEMBA_D1_TENANTS pins some", () => {
    expect(
      resolveWorkerConfig({ PEMBA_DATABASE: "d1:DB, DB2,DB3", PEMBA_D1_TENANTS: "acme=DB2, beta = DB3" }),
    ).toStrictEqual({
      database: "d1:DB, DB2,DB3",
      driver: "d1",
      d1Bindings: ["DB", "DB2", "DB3"],
      d1Tenants: new Map([
        ["acme", "DB2"],
        ["beta", "DB3"],
      ]),
      databaseToken: undefined,
      auth: { mode: "none" },
      corsOrigins: undefined,
      gcWindowMs: 86_400_000,
      replica: { freshnessMs: 1000, maxBytes: 64 * 1048576 },
      maxWatchStreams: 1000,
      maxCompiledSchemaMb: 16,
      schemaWrites: "permify",
      logLevel: "warn",
      ...OBSERVABILITY_OFF,
    });
    const error = (env: Record<string, string>) => () => resolveWorkerConfig(env);
    expect(error({ PEMBA_DATABASE: "d1:DB,DB" })).toThrow(
      new ConfigError('PEMBA_DATABASE "d1:DB,DB": binding DB is listed twice'),
    );
    expect(error({ PEMBA_DATABASE: "d1:DB,", PEMBA_D1_TENANTS: "a=DB" })).toThrow(
      new ConfigError('PEMBA_DATABASE "d1:DB,": expected d1:<BINDING>, e.g. d1:DB, or d1:DB,DB2,DB3'),
    );
    expect(error({ PEMBA_DATABASE: "d1:DB,DB2", PEMBA_D1_TENANTS: "acme=DB9" })).toThrow(
      new ConfigError(
        "PEMBA_D1_TENANTS pins tenant acme to DB9, which PEMBA_DATABASE does not list (DB,DB2)",
      ),
    );
    expect(error({ PEMBA_D1_TENANTS: "acme=DB2" })).toThrow(
      new ConfigError('PEMBA_D1_TENANTS needs D1 databases: PEMBA_DATABASE = "d1:DB,DB2,..."'),
    );
    expect(error({ PEMBA_DATABASE: "d1:DB,DB2", PEMBA_D1_TENANTS: "acme" })).toThrow(
      new ConfigError('invalid PEMBA_D1_TENANTS entry "acme"; expected key=value, e.g. acme=DB2'),
    );
    expect(error({ PEMBA_DATABASE: "d1:DB,DB2", PEMBA_D1_TENANTS: "a=DB,a=DB2" })).toThrow(
      new ConfigError('invalid PEMBA_D1_TENANTS: "a" is given twice'),
    );
  });

  it("PEMBA_D1_SIMULATE: D1's latencies for benchmarks (off by default), or a clear error", () => {
    expect(resolveWorkerConfig({}).d1Simulate).toBeUndefined();
    expect(resolveWorkerConfig({ PEMBA_D1_SIMULATE: "off" }).d1Simulate).toBeUndefined();
    expect(
      resolveWorkerConfig({ PEMBA_D1_SIMULATE: "replica=3ms, primary=100ms, lag=0-2s" }).d1Simulate,
    ).toEqual({ replicaMs: 3, primaryMs: 100, lagMinMs: 0, lagMaxMs: 2000, failWrites: 0 });
    expect(resolveWorkerConfig({ PEMBA_D1_SIMULATE: "lag=1s" }).d1Simulate).toEqual({
      replicaMs: 0,
      primaryMs: 0,
      lagMinMs: 1000,
      lagMaxMs: 1000,
      failWrites: 0,
    });
    expect(resolveWorkerConfig({ PEMBA_D1_SIMULATE: "fail=0.25" }).d1Simulate).toEqual({
      replicaMs: 0,
      primaryMs: 0,
      lagMinMs: 0,
      lagMaxMs: 0,
      failWrites: 0.25,
    });
    for (const bad of [
      "replica=3",
      "lag=2s-1s",
      "primary=1ms-2ms",
      "replica=1ms,replica=2ms",
      "nearby=1ms",
      "fail=2",
      "fail=-0.1",
      "fail=0.1,fail=0.2",
    ]) {
      expect(() => resolveWorkerConfig({ PEMBA_D1_SIMULATE: bad })).toThrow(
        `invalid PEMBA_D1_SIMULATE "${bad}"; expected off or replica=<duration>,primary=<duration>,lag=<duration>[-<duration>],fail=<0-1>, e.g. replica=3ms,primary=100ms,lag=0-2s`,
      );
    }
  });

  it("OIDC: JWKS URL with issuer and audience(s)", () => {
    expect(
      resolveWorkerConfig({
        PEMBA_JWKS_URL: "https://issuer.example/.well-known/jwks.json",
        PEMBA_ISSUER: "https://issuer.example/",
        PEMBA_AUDIENCE: "pemba,other",
      }).auth,
    ).toEqual({
      mode: "oidc",
      jwksUrl: "https://issuer.example/.well-known/jwks.json",
      issuer: "https://issuer.example/",
      audience: ["pemba", "other"],
      requireExp: true,
      clockToleranceSeconds: 5,
    });
    expect(
      resolveWorkerConfig({
        PEMBA_JWKS_URL: "https://issuer.example/.well-known/jwks.json",
        PEMBA_ISSUER: "i",
        PEMBA_AUDIENCE: "a",
        PEMBA_JWT_REQUIRE_EXP: "off",
        PEMBA_JWT_CLOCK_TOLERANCE: "1m",
      }).auth,
    ).toMatchObject({ requireExp: false, clockToleranceSeconds: 60 });
  });

  it("rejects what a Worker cannot serve and inconsistent auth settings", () => {
    const error = (env: Record<string, string>) => {
      try {
        resolveWorkerConfig(env);
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      }
      throw new Error("no error");
    };
    expect(error({ PEMBA_DATABASE: "./pemba.db" })).toBe(
      'PEMBA_DATABASE "./pemba.db" is not supported on Workers; use "memory:", "d1:<BINDING>" (a D1 database binding) or a libsql://, https:// (or wss://) URL of a libSQL server',
    );
    expect(error({ PEMBA_DATABASE: "postgres://u:secret@h/db" })).toContain('"postgres://u:***@h/db"');
    expect(error({ PEMBA_DATABASE: "d1:" })).toBe(
      'PEMBA_DATABASE "d1:": expected d1:<BINDING>, e.g. d1:DB, or d1:DB,DB2,DB3',
    );
    expect(error({ PEMBA_DATABASE: "d1:my-db" })).toBe(
      'PEMBA_DATABASE "d1:my-db": expected d1:<BINDING>, e.g. d1:DB, or d1:DB,DB2,DB3',
    );
    expect(error({ PEMBA_AUTH_KEYS: "k", PEMBA_JWKS_URL: "https://x/jwks" })).toBe(
      "PEMBA_AUTH_KEYS and PEMBA_JWKS_URL are mutually exclusive; choose one auth mode",
    );
    expect(error({ PEMBA_JWKS_URL: "https://x/jwks" })).toBe(
      "PEMBA_JWKS_URL needs PEMBA_ISSUER and PEMBA_AUDIENCE (tokens are checked against both)",
    );
    expect(error({ PEMBA_ISSUER: "https://x/" })).toBe("PEMBA_AUDIENCE and PEMBA_ISSUER need PEMBA_JWKS_URL");
    expect(error({ PEMBA_AUTH_KEYS: " , " })).toBe("PEMBA_AUTH_KEYS is empty");
    expect(error({ PEMBA_GC_WINDOW: "1 day" })).toBe(
      'invalid PEMBA_GC_WINDOW "1 day"; use e.g. 30m, 24h, 7d',
    );
  });
});
