/**
 * A/B of several checkouts' PostgreSQL writes at the store (no HTTP): each checkout's PostgresStore on a database of
 * its own on ONE throwaway server, in one process, with rounds alternating between them (order reversed every
 * round), so drift of the machine hits every checkout alike. Through `pemba serve` (bench-writes.ts) the same cases
 * vary 10-20% from run to run; here a round's spread is a few percent.
 *
 *   node --experimental-strip-types loadtest/ab-pg-writes.ts --repo DIR[#drop=INDEX] --repo DIR ...
 *     [--rounds 10] [--writers 8] [--writes 5] [--rows 1000] [--statements]
 *
 * Each database gets tenant w0, 2,000 seeded rows and ANALYZE (as bench-writes' --fresh). A round runs `--writers`
 * concurrent writers on w0, each sending `--writes` writes of `--rows` tuples (one entity, subjects user:0..rows-1,
 * bench-writes' 1,000-row write), and reports ms per write (wall time / writes) and this process's CPU per write
 * (the store's JavaScript). `#drop=INDEX` drops that index after the checkout's migrations (to measure what an
 * index costs). `--statements` loads pg_stat_statements and prints each database's costliest statements.
 */
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Store } from "@pemba/core";
import { connectPg } from "./lib/database.ts";

const { values } = parseArgs({
  options: {
    repo: { type: "string", multiple: true, default: ["."] },
    rounds: { type: "string", default: "10" },
    writers: { type: "string", default: "8" },
    writes: { type: "string", default: "5" },
    rows: { type: "string", default: "1000" },
    statements: { type: "boolean", default: false },
  },
});
const ROUNDS = Number(values.rounds);
const WRITERS = Number(values.writers);
const WRITES = Number(values.writes);
const ROWS = Number(values.rows);
if (values.statements) {
  process.env.PEMBA_PG_EXTRA = `${process.env.PEMBA_PG_EXTRA ?? ""} -c shared_preload_libraries=pg_stat_statements`;
}

const { startPostgres } = await import("@pemba/core/testing/node");

const server = await startPostgres();
const admin = await connectPg(server.url);
const urlOf = (db: string) => server.url.replace(/\/postgres$/, `/${db}`);
const write = (store: Store, entity: (r: number) => string, subject: (r: number) => string) =>
  store.write("w0", {
    tuples: Array.from({ length: ROWS }, (_, r) => ({
      entity: { type: "doc", id: entity(r) },
      relation: "viewer",
      subject: { type: "user", id: subject(r), relation: "" },
    })),
  });

interface Checkout {
  label: string;
  db: string;
  store: Store;
  ms: number[];
  cpu: number[];
}
const checkouts: Checkout[] = [];
for (const [i, arg] of (values.repo ?? []).entries()) {
  const [dir, variant] = arg.split("#");
  const db = `ab${i}`;
  await admin.query(`CREATE DATABASE ${db}`);
  const { PostgresStore } = (await import(
    join(resolve(dir!), "packages/core/src/node.ts")
  )) as typeof import("@pemba/core/node");
  const store = await PostgresStore.open(urlOf(db));
  await store.createTenant("w0", "w0");
  for (let s = 0; s < 2; s++)
    await write(
      store,
      (r) => `seed-${s * ROWS + r}`,
      (r) => String(r % 100),
    );
  const client = await connectPg(urlOf(db));
  if (variant?.startsWith("drop=")) await client.query(`DROP INDEX ${variant.slice(5)}`);
  await client.query("ANALYZE");
  await client.end();
  checkouts.push({ label: arg, db, store, ms: [], cpu: [] });
}

let batch = 0;
async function round(c: Checkout): Promise<void> {
  const b = batch++;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; i < WRITES; i++) await write(c.store, () => `${b}-${w}-${i}`, String);
    }),
  );
  const n = WRITERS * WRITES;
  c.ms.push((performance.now() - started) / n);
  const used = process.cpuUsage(cpu);
  c.cpu.push((used.user + used.system) / 1000 / n);
}

for (const c of checkouts) {
  await round(c); // warm-up: the JIT and the prepared statements
  c.ms.length = 0;
  c.cpu.length = 0;
}
const started = Date.now();
for (let r = 0; r < ROUNDS; r++) {
  for (const c of r % 2 === 0 ? checkouts : [...checkouts].reverse()) await round(c);
  console.error(`round ${r + 1}/${ROUNDS} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `${WRITERS} writers on one tenant, ${ROWS}-row writes, ${ROUNDS} rounds of ${WRITERS * WRITES} writes`,
);
for (const c of checkouts) {
  const ms = median(c.ms);
  console.log(
    `${c.label}: ${ms.toFixed(2)} ms/write (${(1000 / ms).toFixed(1)} writes/s), JS CPU ${median(c.cpu).toFixed(2)} ms/write; rounds ${c.ms.map((x) => x.toFixed(1)).join(" ")}`,
  );
}
for (const c of checkouts) await c.store.close();
if (values.statements) {
  await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  for (const c of checkouts) {
    const { rows } = await admin.query(
      `SELECT calls, round(mean_exec_time::numeric, 2) AS mean, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS q
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '${c.db}')
        AND query NOT LIKE 'CREATE%' AND query NOT LIKE 'ALTER%' ORDER BY total_exec_time DESC LIMIT 4`,
    );
    console.log(`${c.label}, costliest statements (calls, mean ms):`);
    for (const r of rows) console.log(`  ${r.calls} ${r.mean} ${r.q}`);
  }
}
await admin.end();
await server.stop();
