/**
 * Tenants over several databases: the CPU a warm check costs through createPemba's Worker wiring
 * (lazy replicas, loaded on first use) with ONE database, and with the tenants spread over THREE (a ShardedStore
 * routing each tenant to its database's replica, all under one budget). The databases are SQLite files here, so the
 * figure is the routing's CPU, not D1's latency (a warm check reads no database either way).
 *
 *   node loadtest/bench-shards.ts [--databases 1|3] [--tenants 6] [--ids 1000] [--checks 200000] [--token]
 *   node loadtest/bench-shards.ts --placement
 *
 * Prints one line: databases, tenants per database, CPU microseconds per check (process.cpuUsage, user + system,
 * over --checks checks after a warm-up), checks/s, and the load average. `--token` sends each tenant's write token
 * with every check (the token's database is checked against the tenant's). Runs on an older checkout too (copy the
 * file there): with --databases 1 it uses only what every checkout exports, so one-database figures compare
 * before and after. `--placement` prints instead how rendezvous hashing spreads 10,000 tenant ids (`tenant-0`...)
 * over 2, 3 and 5 databases, how many move when a fourth is added, and the CPU of one placement.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import * as core from "@pemba/core";
import { SqliteStore } from "@pemba/core/node";
import { LOAD_TEST_SCHEMA, loadTestData } from "@pemba/core/testing";

const { values } = parseArgs({
  options: {
    databases: { type: "string", default: "1" },
    tenants: { type: "string", default: "6" },
    ids: { type: "string", default: "1000" },
    checks: { type: "string", default: "200000" },
    token: { type: "boolean", default: false },
    placement: { type: "boolean", default: false },
  },
});

if (values.placement) {
  const { rendezvous } = core as unknown as { rendezvous(dbs: string[], tenant: string): string };
  const ids = Array.from({ length: 10_000 }, (_, i) => `tenant-${i}`);
  for (const dbs of [
    ["DB", "DB2"],
    ["DB", "DB2", "DB3"],
    ["DB", "DB2", "DB3", "DB4", "DB5"],
  ]) {
    const counts = dbs.map((db) => ids.filter((id) => rendezvous(dbs, id) === db).length);
    const even = ids.length / dbs.length;
    const worst = Math.max(...counts.map((c) => Math.abs(c - even) / even));
    console.log(
      `${dbs.length} databases: ${counts.join(" / ")} (worst ${(100 * worst).toFixed(1)}% from even)`,
    );
  }
  const three = ["DB", "DB2", "DB3"];
  const moved = ids.filter((id) => rendezvous(three, id) !== rendezvous([...three, "DB4"], id));
  const toNew = moved.filter((id) => rendezvous([...three, "DB4"], id) === "DB4").length;
  console.log(`adding DB4 to 3: ${moved.length} of ${ids.length} move, ${toNew} of them to DB4`);
  const cpu0 = process.cpuUsage();
  let n = 0;
  for (let round = 0; round < 100; round++) for (const id of ids) if (rendezvous(three, id) === "DB") n++;
  const cpu = process.cpuUsage(cpu0);
  console.log(
    `one placement over 3 databases: ${((1000 * (cpu.user + cpu.system)) / (100 * ids.length)).toFixed(0)} ns CPU (${n} on DB)`,
  );
  process.exit(0);
}
const DATABASES = Number(values.databases);
const TENANTS = Number(values.tenants);
const IDS = Number(values.ids);
const CHECKS = Number(values.checks);

const dir = mkdtempSync(join(tmpdir(), "pemba-bench-shards-"));
const names = Array.from({ length: DATABASES }, (_, i) => (i === 0 ? "DB" : `DB${i + 1}`));
const stores = names.map((name) => SqliteStore.open(join(dir, `${name}.db`)));

function openStore(): core.Store {
  if (DATABASES === 1) return stores[0]!;
  // only a checkout with sharded stores has these
  const { ShardedStore, TenantPlacement } = core as unknown as Record<
    string,
    new (
      ...args: never[]
    ) => core.Store
  >;
  if (ShardedStore === undefined || TenantPlacement === undefined)
    throw new Error("this checkout has no ShardedStore");
  const placement = new (TenantPlacement as unknown as new (o: object) => object)({ databases: names });
  const shards = names.map((name, i) => ({ name, store: stores[i]! }));
  return new (ShardedStore as unknown as new (s: object[], p: object) => core.Store)(shards, placement);
}

const pemba = await core.createPemba(
  {
    database: "bench",
    auth: { mode: "none" },
    gcWindowMs: 0,
    replica: { freshnessMs: 3_600_000, maxBytes: 1024 * 1048576 },
    maxWatchStreams: 10,
    maxCompiledSchemaMb: 64,
  },
  { name: "worker", openStore, replica: "lazy" },
);
const service = pemba.service;

const tenants = Array.from({ length: TENANTS }, (_, i) => `bench-${i}`);
const tokens = new Map<string, string>();
const data = loadTestData(IDS);
for (const t of tenants) {
  await service.createTenant(t, t);
  await service.writeSchema(t, LOAD_TEST_SCHEMA);
  tokens.set(t, await service.writeData(t, "", data.tuples, data.attributes));
}
const placed = new Map<string, number>();
for (const t of tenants) {
  const db =
    DATABASES === 1
      ? "DB"
      : (pemba.store as unknown as { placement: { databaseOf(t: string): string } }).placement.databaseOf(t);
  placed.set(db, (placed.get(db) ?? 0) + 1);
}

const random = core.seededRandom(19);
const queries = Array.from({ length: 4096 }, () => ({
  tenant: tenants[Math.floor(random() * TENANTS)]!,
  entity: { type: "content", id: String(Math.floor(random() * IDS)) },
  permission: "view",
  subject: { type: "user", id: String(Math.floor(random() * IDS)), relation: "" },
}));

async function run(n: number): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < n; i++) {
    const q = queries[i & 4095]!;
    const meta = { schemaVersion: "", snapToken: values.token ? tokens.get(q.tenant)! : "", depth: 20 };
    const out = await service.check(q.tenant, meta, q);
    if (out.can === "CHECK_RESULT_ALLOWED") allowed++;
  }
  return allowed;
}

await run(8192); // loads every tenant's copy, compiles the schema, warms the JIT
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
const allowed = await run(CHECKS);
const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
const usPerCheck = (cpu.user + cpu.system) / CHECKS;
console.log(
  `databases ${DATABASES} (tenants per database ${[...placed.values()].join("/")}) token ${values.token ? "yes" : "no"}: ` +
    `${usPerCheck.toFixed(2)} us CPU per check, ${Math.round(CHECKS / wallS)} checks/s, ` +
    `${allowed} of ${CHECKS} allowed, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
);
await pemba.close();
rmSync(dir, { recursive: true, force: true });
