/** The bindings of vitest.workerd.config.ts and the helpers the tests use, as `cloudflare:test` exports them. */
declare module "cloudflare:test" {
  import type { D1Database } from "@pemba/core";

  interface D1Migration {
    name: string;
    queries: string[];
  }
  export const env: {
    DB: D1Database;
    REPLICA: D1Database;
    DB2: D1Database;
    DB3: D1Database;
    TEST_MIGRATIONS: D1Migration[];
  };
  /** Applies migrations the way `wrangler d1 migrations apply` does (table d1_migrations). */
  export function applyD1Migrations(db: D1Database, migrations: D1Migration[]): Promise<void>;
}

/** The tests' view of "cloudflare:workers": the main module's exports (the shipped entry's fetch handler). */
declare module "cloudflare:workers" {
  export const exports: { default: { fetch(request: Request): Promise<Response> } };
}
