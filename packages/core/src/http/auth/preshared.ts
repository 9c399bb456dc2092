/** Preshared keys (`Authorization: Bearer <key>`), each optionally limited to some tenants. */
import { PembaError } from "../../errors.ts";
import { type Authenticator, bearerToken, type Principal, tenantsPrincipal } from "./principal.ts";

export interface PresharedKey {
  key: string;
  /** Tenants this key may use; undefined or ["*"] = all (and the tenancy endpoints). */
  tenants?: string[];
}

/**
 * Parses the CLI/env form: comma-separated keys, each `key` or `key:t1|t2` (e.g. `"admin,k1:t1|t2"`).
 * A key itself cannot contain `,` or `:`.
 */
export function parsePresharedKeys(spec: string): PresharedKey[] {
  return spec
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map((s) => {
      const i = s.indexOf(":");
      if (i < 0) return { key: s };
      return {
        key: s.slice(0, i),
        tenants: s
          .slice(i + 1)
          .split("|")
          .filter((t) => t !== ""),
      };
    });
}

export class PresharedKeyAuthenticator implements Authenticator {
  readonly #keys = new Map<string, Principal>();

  constructor(keys: PresharedKey[]) {
    for (const k of keys) this.#keys.set(k.key, tenantsPrincipal(k.tenants));
  }

  authenticate(authorization: string | undefined): Principal {
    const principal = this.#keys.get(bearerToken(authorization));
    if (principal === undefined) throw new PembaError("ERROR_CODE_INVALID_KEY");
    return principal;
  }
}
