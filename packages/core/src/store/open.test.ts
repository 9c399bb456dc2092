import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { driverFor, migrate, openStore } from "./open.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-open-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("openStore", () => {
  it("picks the driver from the URL", () => {
    expect(driverFor("memory:")).toBe("memory");
    expect(driverFor("postgres://u@h/db")).toBe("postgres");
    expect(driverFor("postgresql://u@h/db")).toBe("postgres");
    expect(driverFor("libsql://db.turso.io")).toBe("libsql");
    expect(driverFor("https://db.example.com")).toBe("libsql");
    expect(driverFor("file:/tmp/x.db")).toBe("libsql");
    expect(driverFor("./pemba.db")).toBe("sqlite");
    expect(driverFor("sqlite:///tmp/x.db")).toBe("sqlite");
  });

  it("opens memory, SQLite and libSQL stores with t1", async () => {
    for (const url of [
      "memory:",
      join(dir, "a.db"),
      `sqlite://${join(dir, "b.db")}`,
      `file:${join(dir, "c.db")}`,
    ]) {
      const store = await openStore(url);
      expect((await store.getTenant("t1"))?.name).toBe("example tenant");
      await store.close();
    }
  });

  it("migrate applies the migrations once and reports their names", async () => {
    const url = join(dir, "migrate.db");
    expect(await migrate(url)).toEqual([
      "0000_init",
      "0001_seed",
      "0002_per_tenant_tx_ids",
      "0003_subject_page_index",
      "0004_expiry",
      "0005_partial_expiry_index",
      "0006_drop_subject_page_index",
    ]);
    expect(await migrate(url)).toEqual([]);
    expect(await migrate(`file:${join(dir, "migrate-libsql.db")}`)).toEqual([
      "0000_init",
      "0001_seed",
      "0002_per_tenant_tx_ids",
      "0003_subject_page_index",
      "0004_expiry",
      "0005_partial_expiry_index",
      "0006_drop_subject_page_index",
    ]);
    expect(await migrate("memory:")).toEqual([]);
  });
});
