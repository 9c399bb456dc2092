/**
 * The SQL store's own cost per request, replica off: checks on the SQLite store (better-sqlite3, synchronous, so
 * statement building shows), small writes, and building the engine's read statement alone. Permify's load-test
 * schema and seed data (`--ids`), one file database, single-threaded; each phase runs in `--windows` windows and
 * reports the median. For A/B runs of statement building (run it in two worktrees, alternately).
 *
 *   node --experimental-strip-types loadtest/bench-sql-plans.ts [--ids 10000] [--windows 5] [--ms 1000]
 *
 * Prints one line per phase: checks (µs/check), writes (µs/write of 10 tuples), build-N (µs to build one
 * queryTuplesStatement with N keys).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type CheckQuery, PembaService } from "@pemba/core";
import { SqliteStore } from "@pemba/core/node";
import { LOAD_TEST_SCHEMA, loadTestData, queryTuplesStatement, sqliteDialect } from "@pemba/core/testing";

const { values } = parseArgs({
  options: { ids: { type: "string" }, windows: { type: "string" }, ms: { type: "string" } },
});
const IDS = Number(values.ids ?? 10_000);
const WINDOWS = Number(values.windows ?? 5);
const WINDOW_MS = Number(values.ms ?? 1000);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Microseconds per call of `op` over one window (median of `WINDOWS` windows). */
async function perCall(op: (i: number) => unknown): Promise<number> {
  const windows: number[] = [];
  let i = 0;
  for (let w = 0; w < WINDOWS; w++) {
    let n = 0;
    const start = performance.now();
    const end = start + WINDOW_MS;
    while (performance.now() < end) {
      const r = op(i++);
      if (r instanceof Promise) await r;
      n++;
    }
    windows.push(((performance.now() - start) * 1000) / n);
  }
  return median(windows);
}

const dir = mkdtempSync(join(tmpdir(), "pemba-bench-plans-"));
try {
  const store = SqliteStore.open(join(dir, "bench.db"));
  const service = new PembaService(store);
  await service.writeSchema("t1", LOAD_TEST_SCHEMA);
  const { tuples, attributes } = loadTestData(IDS);
  for (let i = 0; i < tuples.length; i += 5000) {
    await service.writeData("t1", "", tuples.slice(i, i + 5000), i === 0 ? attributes : []);
  }
  const meta = { schemaVersion: "", snapToken: "", depth: 20 };
  const query = (i: number): CheckQuery => ({
    entity: { type: i % 2 === 0 ? "content" : "interaction", id: String((i * 7919) % IDS) },
    permission: "view",
    subject: { type: "user", id: String((i * 104729) % IDS), relation: "" },
  });
  // warm-up: the schema cache, prepared statements, JIT
  for (let i = 0; i < 2000; i++) await service.check("t1", meta, query(i));

  const checks = await perCall((i) => service.check("t1", meta, query(i)));
  const writes = await perCall((i) =>
    store.write("t1", {
      tuples: Array.from({ length: 10 }, (_, j) => ({
        entity: { type: "content", id: `w${i}-${j}` },
        relation: "owner",
        subject: { type: "user", id: String(j), relation: "" },
      })),
    }),
  );
  const build = async (keys: number) => {
    const ids = Array.from({ length: keys }, (_, j) => String(j));
    return perCall((i) =>
      queryTuplesStatement(
        sqliteDialect,
        "t1",
        i,
        [{ entityType: "content", entityIds: ids, relations: ["owner"] }],
        Date.now(),
      ),
    );
  };
  const line = (name: string, us: number) => process.stdout.write(`${name.padEnd(10)} ${us.toFixed(2)} µs\n`);
  line("checks", checks);
  line("writes", writes);
  for (const keys of [1, 10, 100]) line(`build-${keys}`, await build(keys));
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
