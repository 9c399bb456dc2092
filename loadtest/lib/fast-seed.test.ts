/**
 * The fast seeder writes the rows Permify's seed writer writes through HTTP: at 1,501 ids (the last tuple and
 * attribute batches partial), one database seeded by k6/permify-seed-writer.js through `pemba serve`, one by
 * fastSeed, on SQLite and on PostgreSQL; every tuple, attribute and transaction row (ids, transaction ids and all)
 * and the counters a next write takes its ids from are equal, and the seed's spot checks hold on the fast one.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPg } from "./database.ts";
import { fastSeed } from "./fast-seed.ts";
import { ensureK6 } from "./k6.ts";
import { seed, spotCheck, writeSeedSchema } from "./seed.ts";
import { startPemba } from "./servers.ts";

const IDS = 1501;
const dir = mkdtempSync(join(tmpdir(), "pemba-fast-seed-"));

beforeAll(() => {
  ensureK6();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Seeds `database` through HTTP (the k6 seed writer) and returns the schema version. */
async function httpSeed(database: string): Promise<string> {
  const server = await startPemba(database, ["--log-level", "warn", "--replica", "off"]);
  try {
    const version = await writeSeedSchema(server.url);
    await seed(server.url, version, () => {}, { totalIds: IDS });
    return version;
  } finally {
    await server.stop();
  }
}

async function spotChecked(database: string, version: string): Promise<number> {
  const server = await startPemba(database, ["--log-level", "warn"]);
  try {
    return await spotCheck(server.url, version, undefined, IDS);
  } finally {
    await server.stop();
  }
}

const TUPLES = "SELECT * FROM tuples ORDER BY id";
const ATTRIBUTES = "SELECT * FROM attributes ORDER BY id";
const TRANSACTIONS = "SELECT id, tenant_id FROM transactions ORDER BY id";

describe("fastSeed", () => {
  it("writes the HTTP seed writer's rows into SQLite", async () => {
    const http = join(dir, "http.db");
    const fast = join(dir, "fast.db");
    await httpSeed(http);
    const result = await fastSeed(fast, IDS);
    expect(result.schemaVersion).not.toBe("");
    const Database = createRequire(import.meta.resolve("@pemba/core/node"))("better-sqlite3") as new (
      p: string,
    ) => { prepare(s: string): { all(): unknown[] }; close(): void };
    const read = (path: string) => {
      const db = new Database(path);
      try {
        return [
          TUPLES,
          ATTRIBUTES,
          TRANSACTIONS,
          "SELECT * FROM pemba_meta ORDER BY key",
          "SELECT * FROM sqlite_sequence ORDER BY name",
        ].map((s) => db.prepare(s).all());
      } finally {
        db.close();
      }
    };
    const [a, b] = [read(http), read(fast)];
    expect(b[0]).toHaveLength(6 * IDS);
    expect(b[1]).toHaveLength(2 * IDS);
    expect(b[2]).toHaveLength(Math.ceil((6 * IDS) / 1000) + Math.ceil((2 * IDS) / 1000));
    expect(b).toEqual(a);
    expect(await spotChecked(fast, result.schemaVersion)).toBe(9);
  });

  it("writes the HTTP seed writer's rows into PostgreSQL", async () => {
    const { startPostgres } = await import("@pemba/core/testing/node");
    const pg = await startPostgres();
    try {
      const admin = await connectPg(pg.url);
      await admin.query("CREATE DATABASE fast");
      await admin.end();
      const fast = pg.url.replace(/\/postgres$/, "/fast");
      await httpSeed(pg.url);
      const result = await fastSeed(fast, IDS);
      expect(result.schemaVersion).not.toBe("");
      const read = async (url: string) => {
        const db = await connectPg(url);
        try {
          const out: unknown[] = [];
          for (const s of [
            TUPLES,
            ATTRIBUTES,
            TRANSACTIONS,
            "SELECT id, head_tx FROM tenants ORDER BY id",
            "SELECT last_value FROM pemba_tx_ids",
            "SELECT last_value FROM tuples_id_seq",
            "SELECT last_value FROM attributes_id_seq",
          ])
            out.push((await db.query(s)).rows);
          return out;
        } finally {
          await db.end();
        }
      };
      const [a, b] = [await read(pg.url), await read(fast)];
      expect(b[0]).toHaveLength(6 * IDS);
      expect(b[1]).toHaveLength(2 * IDS);
      expect(b).toEqual(a);
      expect(await spotChecked(fast, result.schemaVersion)).toBe(9);
    } finally {
      await pg.stop();
    }
  });
});
