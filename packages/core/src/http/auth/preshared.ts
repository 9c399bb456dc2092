/** Preshared keys (`Authorization: Bearer <key>`), each optionally limited to some tenants. */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { PembaError } from "../../errors.ts";
import { type Authenticator, bearerToken, type Principal, tenantsPrincipal } from "./principal.ts";

export interface PresharedKey {
  key: string;
  /** Tenants this key may use; undefined or ["*"] = all (and the tenancy endpoints). */
  tenants?: string[];
}

export class PresharedKeyAuthenticator implements Authenticator {
  readonly #keys = new Map<string, Principal>();

  constructor(keys: PresharedKey[]) {
    for (const k of keys) this.#keys.set(k.key, tenantsPrincipal(k.tenants, keyName(k.key)));
  }

  authenticate(authorization: string | undefined): Principal {
    const principal = this.#keys.get(bearerToken(authorization));
    if (principal === undefined) throw new PembaError("ERROR_CODE_INVALID_KEY");
    return principal;
  }
}

/**
 * A key's name in the decision log: `key:` and the first 8 hex digits of the key's SHA-256, so records say which key
 * asked without holding the key.
 */
export function keyName(key: string): string {
  return `key:${bytesToHex(sha256(new TextEncoder().encode(key))).slice(0, 8)}`;
}
