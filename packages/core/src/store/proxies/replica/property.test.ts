/**
 * The working-set replica equals the store at every snap (replicaProperty, @pemba/core/testing): random writes,
 * deletes, expiry, GC, schema changes and a budget so small that keys are evicted all the time, over memory, SQLite
 * and PostgreSQL, through the Node server's replica (ReplicaStore.open) and the Worker's (ReplicaStore.lazy), with
 * and without whole-tenant preloading (runs started every few steps and racing the writes that follow).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaPreloadKeys } from "../../../service/preload-keys.ts";
import { replicaProperty } from "../../../service/testing/replica-property.ts";
import { PostgresStore } from "../../drivers/postgres.ts";
import { SqliteStore } from "../../drivers/sqlite.ts";
import { MemoryStore } from "../../memory/memory-store.ts";
import type { Store } from "../../store.ts";
import { type PostgresServer, startPostgres } from "../../testing/postgres-server.ts";
import { ReplicaStore, WorkingSetBudget } from "./index.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-replica-property-"));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Room for a few dozen keys: most fills evict. */
const MAX_BYTES = 6000;

type Mode = "open" | "lazy" | "lazy, looks every read" | "open, preloading" | "lazy, preloading";

async function run(inner: Store, mode: Mode, seed: number, steps: number) {
  const budget = new WorkingSetBudget(MAX_BYTES);
  const preload = mode.endsWith("preloading");
  let preloadReads = 0;
  const replica = mode.startsWith("open")
    ? await ReplicaStore.open(inner, {
        budget,
        refreshMs: 0,
        preload: preload ? schemaPreloadKeys : undefined,
      })
    : ReplicaStore.lazy(inner, {
        budget,
        freshnessMs: mode === "lazy, looks every read" ? 0 : 60_000,
        preload: preload ? schemaPreloadKeys : undefined,
      });
  const counts = await replicaProperty({
    inner,
    replica,
    seed,
    steps,
    evictions: () => budget.evictions,
    preload: preload
      ? async () => {
          preloadReads += (await replica.preload("t1"))?.steps ?? 0;
        }
      : undefined,
  });
  // preloads started all along the run, and they filled keys
  if (preload) expect(counts.preloads).toBeGreaterThan(steps / 10);
  if (preload) expect(preloadReads).toBeGreaterThan(0);
  expect(budget.bytes).toBeLessThanOrEqual(MAX_BYTES);
  // the run compared answers and the budget evicted
  expect(counts.checks).toBeGreaterThan(steps);
  expect(counts.reads).toBeGreaterThan(steps / 5);
  expect(counts.gcs + counts.sweeps + counts.schemas).toBeGreaterThan(0);
  expect(counts.evictions).toBeGreaterThan(0);
  await replica.close();
  return counts;
}

const MODES: Mode[] = ["open", "lazy", "lazy, looks every read", "open, preloading", "lazy, preloading"];

describe("working-set replica = store, at random snaps", () => {
  for (const mode of MODES) {
    it(`memory (${mode})`, async () => {
      for (const seed of [1, 2, 3]) await run(new MemoryStore(), mode, seed, 300);
    });
    it(`SQLite (${mode})`, async () => {
      for (const seed of [11, 12]) await run(SqliteStore.open(join(dir, `p-${n++}.db`)), mode, seed, 250);
    });
  }
});

describe("working-set replica = store, at random snaps, PostgreSQL", () => {
  let server: PostgresServer;
  let admin: pg.Pool;
  beforeAll(async () => {
    server = await startPostgres();
    admin = new pg.Pool({ connectionString: server.url, max: 1 });
  }, 60_000);
  afterAll(async () => {
    await admin?.end();
    await server?.stop();
  });
  async function fresh(): Promise<PostgresStore> {
    const name = `pemba_property_${n++}`;
    await admin.query(`CREATE DATABASE ${name}`);
    return PostgresStore.open(server.url.replace(/\/postgres$/, `/${name}`));
  }
  for (const mode of MODES) {
    it(`PostgreSQL (${mode})`, async () => {
      await run(await fresh(), mode, 21, 200);
    }, 120_000);
  }
});
