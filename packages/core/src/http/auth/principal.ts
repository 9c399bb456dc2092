/** Who made a request, as far as tenancy goes: `tenants === null` means every tenant (an unrestricted key). */
import { PembaError } from "../../errors.ts";

export interface Principal {
  tenants: ReadonlySet<string> | null;
  /** Who it is, for the decision log: `key:<fingerprint>` for a preshared key, the JWT's `sub`; none without auth. */
  name?: string;
}

export const UNRESTRICTED: Principal = { tenants: null };

export interface Authenticator {
  authenticate(authorization: string | undefined): Principal | Promise<Principal>;
}

/** The token of `Authorization: Bearer <token>`; Permify answers a missing one with HTTP 500, gRPC code 2. */
export function bearerToken(authorization: string | undefined): string {
  const match = authorization === undefined ? null : /^bearer\s+(\S+)\s*$/i.exec(authorization);
  if (match === null) throw new PembaError("ERROR_CODE_MISSING_BEARER_TOKEN", undefined, { grpcCode: 2 });
  return match[1];
}

/** A request for a tenant the principal may not use: HTTP 403, gRPC 7 (PERMISSION_DENIED); nothing is read. */
export function assertTenantAllowed(principal: Principal, tenantId: string): void {
  if (principal.tenants !== null && !principal.tenants.has(tenantId)) {
    throw new PembaError("ERROR_CODE_PERMISSION_DENIED", undefined, { grpcCode: 7 });
  }
}

/** Creating, listing and deleting tenants needs an unrestricted key or token. */
export function assertUnrestricted(principal: Principal): void {
  if (principal.tenants !== null)
    throw new PembaError("ERROR_CODE_PERMISSION_DENIED", undefined, { grpcCode: 7 });
}

/** A tenant list from config or a claim; "*" (or no list) = every tenant. */
export function tenantsPrincipal(tenants: readonly string[] | undefined, name?: string): Principal {
  const all = tenants === undefined || tenants.includes("*");
  if (name === undefined) return all ? UNRESTRICTED : { tenants: new Set(tenants) };
  return { tenants: all ? null : new Set(tenants), name };
}
