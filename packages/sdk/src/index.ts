/**
 * @pemba/sdk: a typed client for Pemba's (and Permify's) HTTP API over `fetch`; Node 20+, browsers, Workers.
 * No runtime dependencies. Request and answer types are generated from the server's wire schemas.
 */
import { type ClientOptions, PembaClient } from "./client.ts";
import type { SchemaTypes, TypedClient } from "./typed.ts";

export { type AccessEvaluationsInput, AuthzenClient } from "./authzen.ts";
export { type ClientOptions, PembaClient, type SchemaVersionInfo, type Tenant } from "./client.ts";
export { PembaApiError, PembaConnectionError, PembaError, PembaTimeoutError } from "./errors.ts";
export {
  type AllPages,
  type CheckResult,
  type DataChange,
  type EntityInput,
  type ExpandNode,
  type ExplainAnswer,
  type Proof,
  parseRef,
  type SubjectInput,
  type WatchChanges,
  type WithOptionalMetadata,
} from "./requests.ts";
export { type CallOptions, isRetryable, type RetryOptions } from "./transport.ts";
export type * from "./typed.ts";
export type * from "./wire.gen.ts";

/**
 * A client for one tenant. With a schema description from `pemba codegen` as type argument
 * (`createClient<AuthzSchema>(...)`), entity types, relations, permissions and attributes are checked at compile
 * time.
 */
export function createClient(options: ClientOptions): PembaClient;
export function createClient<S extends SchemaTypes>(options: ClientOptions): TypedClient<S>;
export function createClient(options: ClientOptions): PembaClient | TypedClient<SchemaTypes> {
  return new PembaClient(options);
}

/** The same client, typed by a schema description from `pemba codegen`. */
export function typedClient<S extends SchemaTypes>(client: PembaClient): TypedClient<S> {
  return client as unknown as TypedClient<S>;
}
