/**
 * Tests that run INSIDE workerd (@cloudflare/vitest-plugin), on the shipped Worker: the repository's wrangler.toml
 * (its entry, packages/worker/src/index.ts, which `exports.default` of "cloudflare:workers" calls; its
 * compatibility date and flags; its vars; its D1 binding DB), against miniflare's local D1 databases (real
 * SQLite). Beside DB: REPLICA, a second database that test/workerd/lagging-replica.ts feeds late, DB2 and DB3 two
 * more primaries for tenants spread over several databases (DB, DB2, DB3); TEST_MIGRATIONS the SQLite migrations
 * read the way wrangler reads them.
 */
import { fileURLToPath } from "node:url";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineProject } from "vitest/config";

export default defineProject({
  plugins: [
    cloudflareTest(async () => ({
      wrangler: { configPath: fileURLToPath(new URL("../../wrangler.toml", import.meta.url)) },
      miniflare: {
        // DB2 and DB3: with DB, the three databases tenants are spread over (test/workerd/d1-shards.test.ts)
        d1Databases: ["DB", "REPLICA", "DB2", "DB3"],
        // drizzle-kit's SQLite migrations as `wrangler d1 migrations apply` reads and splits them
        bindings: {
          TEST_MIGRATIONS: await readD1Migrations(
            fileURLToPath(new URL("../core/drizzle/sqlite", import.meta.url)),
          ),
        },
      },
    })),
  ],
  test: {
    name: "worker-d1",
    // the files share the local databases
    fileParallelism: false,
    include: ["test/workerd/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
