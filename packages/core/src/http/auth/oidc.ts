/**
 * OIDC access tokens: JWTs verified against the issuer's JWKS (jose's remote key set: keys are cached, and
 * refetched on an unknown `kid`, at most once per cooldown). The set is reloaded in the background before it
 * expires, so that no request waits for a routine reload. Checks signature, `iss`, `aud`, `exp`, `nbf`, and
 * `iat`: a token must carry `exp` (unless `requireExp` is false) and may not be issued in the future, each time
 * with `clockToleranceSeconds` of skew.
 */
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from "jose";
import { PembaError } from "../../errors.ts";
import { sharedWork } from "../../shared-work.ts";
import { type Authenticator, bearerToken, type Principal, tenantsPrincipal } from "./principal.ts";

export interface OidcConfig {
  issuer: string;
  audience: string | string[];
  /** The issuer's JWKS URL (e.g. `https://issuer/.well-known/jwks.json`). */
  jwksUrl: string;
  /** Accepted algorithms (default RS256, ES256, EdDSA). */
  algorithms?: string[];
  /** Claim holding the tenants the token may use (an array or a space/comma separated string); default
   * `pemba_tenants`. Without the claim the token may use every tenant. */
  tenantsClaim?: string;
  /** Allowed clock skew in seconds on `exp`, `nbf` and `iat` (default 5). */
  clockToleranceSeconds?: number;
  /** Refuse a token without `exp` (default true): a token that never expires cannot be revoked by time. */
  requireExp?: boolean;
  /** How long fetched keys are trusted (default 10 minutes). */
  jwksCacheMaxAgeMs?: number;
  /** Minimum time between two JWKS fetches (default 30 s). */
  jwksCooldownMs?: number;
}

/** Default clock skew allowed on `exp`, `nbf` and `iat`. */
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 5;

/** Share of the JWKS max age after which the set is reloaded in the background, while its keys are still trusted. */
export const JWKS_REFRESH_AHEAD = 0.9;

export class OidcAuthenticator implements Authenticator {
  readonly #config: OidcConfig;
  readonly #jwks: ReturnType<typeof createRemoteJWKSet>;
  readonly #refreshAfterMs: number;
  /** When the key set was first asked for or its last background reload started (ms since the epoch). */
  #loadedAt: number | undefined;

  constructor(config: OidcConfig) {
    this.#config = config;
    const maxAge = config.jwksCacheMaxAgeMs ?? 600_000;
    this.#refreshAfterMs = maxAge * JWKS_REFRESH_AHEAD;
    this.#jwks = createRemoteJWKSet(new URL(config.jwksUrl), {
      cacheMaxAge: maxAge,
      cooldownDuration: config.jwksCooldownMs ?? 30_000,
    });
  }

  /**
   * Starts a reload of the key set once it has been held for JWKS_REFRESH_AHEAD of its max age, without waiting
   * for it: jose's key set makes every request wait on the fetch once the set has expired, and under load the
   * requests parked on it then all resume at once (a burst of concurrent verifications that raises the process's
   * memory high-water mark). A reload that fails leaves the keys to expire; requests after that wait on jose's
   * own reload, as the first request does.
   */
  #refreshAhead(): void {
    const now = Date.now();
    if (this.#loadedAt === undefined) {
      this.#loadedAt = now;
      return;
    }
    if (now - this.#loadedAt < this.#refreshAfterMs || this.#jwks.reloading) return;
    this.#loadedAt = now;
    // no request awaits it: on the Worker the request that starts it stays until it settles (shared-work.ts)
    sharedWork(this.#jwks.reload()).catch(() => {});
  }

  async authenticate(authorization: string | undefined): Promise<Principal> {
    const token = bearerToken(authorization);
    this.#refreshAhead();
    let payload: JWTPayload;
    const tolerance = this.#config.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS;
    try {
      ({ payload } = await jwtVerify(token, this.#jwks, {
        issuer: this.#config.issuer,
        audience: this.#config.audience,
        algorithms: this.#config.algorithms ?? ["RS256", "ES256", "EdDSA"],
        clockTolerance: tolerance,
        requiredClaims: this.#config.requireExp === false ? [] : ["exp"],
      }));
    } catch (e) {
      throw oidcError(e);
    }
    // jose compares `iat` with the clock only under maxTokenAge (which would make `iat` required): a token issued
    // in the future is a forged or mis-clocked one
    if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + tolerance)
      throw new PembaError("ERROR_CODE_INVALID_CLAIMS");
    return tenantsPrincipal(
      tenantsFromClaim(payload[this.#config.tenantsClaim ?? "pemba_tenants"]),
      payload.sub ?? "",
    );
  }
}

function tenantsFromClaim(claim: unknown): string[] | undefined {
  if (claim === undefined) return undefined;
  if (typeof claim === "string") return claim.split(/[\s,]+/).filter((t) => t !== "");
  if (Array.isArray(claim)) return claim.filter((t): t is string => typeof t === "string");
  throw new PembaError("ERROR_CODE_INVALID_CLAIMS");
}

function oidcError(e: unknown): PembaError {
  if (e instanceof errors.JWTExpired) return new PembaError("ERROR_CODE_INVALID_CLAIMS");
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.claim === "iss") return new PembaError("ERROR_CODE_INVALID_ISSUER");
    if (e.claim === "aud") return new PembaError("ERROR_CODE_INVALID_AUDIENCE");
    return new PembaError("ERROR_CODE_INVALID_CLAIMS");
  }
  return new PembaError("ERROR_CODE_INVALID_BEARER_TOKEN");
}
