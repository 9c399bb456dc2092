/**
 * OIDC access tokens: JWTs verified against the issuer's JWKS (jose's remote key set: keys are cached, and
 * refetched on an unknown `kid`, at most once per cooldown). Checks signature, `iss`, `aud`, `exp`, `nbf`, and
 * `iat`: a token must carry `exp` (unless `requireExp` is false) and may not be issued in the future, each time
 * with `clockToleranceSeconds` of skew.
 */
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from "jose";
import { PembaError } from "../../errors.ts";
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

export class OidcAuthenticator implements Authenticator {
  readonly #config: OidcConfig;
  readonly #jwks: ReturnType<typeof createRemoteJWKSet>;

  constructor(config: OidcConfig) {
    this.#config = config;
    this.#jwks = createRemoteJWKSet(new URL(config.jwksUrl), {
      cacheMaxAge: config.jwksCacheMaxAgeMs ?? 600_000,
      cooldownDuration: config.jwksCooldownMs ?? 30_000,
    });
  }

  async authenticate(authorization: string | undefined): Promise<Principal> {
    const token = bearerToken(authorization);
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
