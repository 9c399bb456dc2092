/** The part of the Workers runtime's `cloudflare:workers` module the Worker uses: the bindings, at module scope. */
declare module "cloudflare:workers" {
  export const env: Record<string, unknown>;
}
