/**
 * `pemba serve` configuration: command-line flags win over PEMBA_* environment variables, which win over the
 * zero-config defaults (SQLite file ./pemba.db on 127.0.0.1:3476, no auth). Every setting is defined once in
 * @pemba/core (settings/definition.ts); this module adds what only a listening server checks.
 */
import { isIP } from "node:net";
import { ConfigError, type Flags, type NodeSettings, resolveNodeSettings } from "@pemba/core";

export type { AuthConfig, LogLevel, PresharedKey } from "@pemba/core";
export { ConfigError, describeDatabase, parseDuration } from "@pemba/core";

export type ServeConfig = NodeSettings;

/** Merges flags over env vars and validates every value. */
export function resolveServeConfig(flags: Flags, env: NodeJS.ProcessEnv = process.env): ServeConfig {
  return resolveNodeSettings(flags, env);
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
