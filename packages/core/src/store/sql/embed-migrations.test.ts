import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readMigrations, renderMigrationsModule } from "./embed-migrations.ts";
import { SQLITE_MIGRATIONS_URL } from "./migrations-location.ts";
import { SQLITE_MIGRATIONS } from "./sqlite-migrations.generated.ts";

describe("embedded SQLite migrations", () => {
  it("match packages/core/drizzle/sqlite (regenerate with embed-migrations.ts)", () => {
    const fromDisk = readMigrations(fileURLToPath(SQLITE_MIGRATIONS_URL));
    expect(SQLITE_MIGRATIONS).toEqual(fromDisk);
    expect(fromDisk.map((m) => m.tag)).toEqual([
      "0000_init",
      "0001_seed",
      "0002_per_tenant_tx_ids",
      "0003_subject_page_index",
      "0004_expiry",
      "0005_partial_expiry_index",
      "0006_drop_subject_page_index",
    ]);
    expect(renderMigrationsModule(fromDisk)).toContain("export const SQLITE_MIGRATIONS");
  });
});
