/** Authentication modes of the HTTP API: none (default), preshared keys, OIDC access tokens. */
import { OidcAuthenticator, type OidcConfig } from "./oidc.ts";
import { type PresharedKey, PresharedKeyAuthenticator } from "./preshared.ts";
import type { Authenticator } from "./principal.ts";

export type AuthConfig =
  | { mode: "none" }
  | { mode: "preshared"; keys: PresharedKey[] }
  | ({ mode: "oidc" } & OidcConfig);

/** undefined = no authentication (every request may use every tenant). */
export function createAuthenticator(config: AuthConfig | undefined): Authenticator | undefined {
  if (config === undefined || config.mode === "none") return undefined;
  if (config.mode === "preshared") return new PresharedKeyAuthenticator(config.keys);
  return new OidcAuthenticator(config);
}

export { OidcAuthenticator, type OidcConfig } from "./oidc.ts";
export { type PresharedKey, PresharedKeyAuthenticator } from "./preshared.ts";
export {
  type Authenticator,
  assertTenantAllowed,
  assertUnrestricted,
  bearerToken,
  type Principal,
  UNRESTRICTED,
} from "./principal.ts";
