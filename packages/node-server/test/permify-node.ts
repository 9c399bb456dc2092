/**
 * @permify/permify-node, loaded as its own JavaScript at run time. Its package ships its TypeScript sources beside
 * the declarations, and the type checker would compile those (ts-proto's enums and CommonJS exports fail this
 * repo's `erasableSyntaxOnly` and `verbatimModuleSyntax`); the tests read its answers through the proto instead.
 */
import { createRequire } from "node:module";

// biome-ignore lint/suspicious/noExplicitAny: the client's requests and answers are ts-proto objects, checked by the tests field by field
export type Loose = any;

type Config = {
  endpoint: string;
  insecure: boolean;
  cert: Buffer | null;
  pk: Buffer | null;
  certChain: Buffer | null;
};

export interface PermifyNode {
  grpc: {
    newClient(config: Config, ...interceptors: unknown[]): Record<string, Record<string, Loose>>;
    newAccessTokenInterceptor(token: string): unknown;
    /** The request and response messages of base.v1's services, by name, with ts-proto's codec. */
    payload: Record<string, { encode(message: unknown): { finish(): Uint8Array } }>;
    base: Loose;
  };
}

export const permify = createRequire(import.meta.url)("@permify/permify-node") as PermifyNode;

/** A client of `endpoint` (host:port) in cleartext, with a bearer key unless `key` is undefined. */
export function permifyClient(endpoint: string, key?: string, cert: Buffer | null = null) {
  const config = { endpoint, insecure: cert === null, cert, pk: null, certChain: null };
  const interceptors = key === undefined ? [] : [permify.grpc.newAccessTokenInterceptor(key)];
  return permify.grpc.newClient(config, ...interceptors);
}
