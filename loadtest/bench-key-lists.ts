/**
 * Key lists in engine reads on SQLite: bound `VALUES` (sqliteDialect, up to 999 values) against ONE `json_each`
 * parameter (what d1Dialect binds above 45 values, to stay under D1's 100 parameters per statement). Same
 * statement shape (queryTuplesStatement), same file database with `--tuples` rows, alternating A/B windows.
 *
 *   node loadtest/bench-key-lists.ts [--tuples 200000] [--windows 10] [--ms 300]
 *
 * Prints, per key count, the median over windows of each side's statements/s and the ratio json_each/VALUES.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SqliteStore } from "@pemba/core/node";
import { d1Dialect, queryTuplesStatement, sqliteDialect } from "@pemba/core/testing";

const { values } = parseArgs({
  options: { tuples: { type: "string" }, windows: { type: "string" }, ms: { type: "string" } },
});
const TUPLES = Number(values.tuples ?? 200_000);
const WINDOWS = Number(values.windows ?? 10);
const WINDOW_MS = Number(values.ms ?? 300);

const dir = mkdtempSync(join(tmpdir(), "pemba-bench-keys-"));
const file = join(dir, "bench.db");
const store = SqliteStore.open(file);
const started = performance.now();
for (let i = 0; i < TUPLES; i += 10_000) {
  const tuples = [];
  for (let j = i; j < Math.min(i + 10_000, TUPLES); j++) {
    tuples.push({
      entity: { type: "doc", id: String(j) },
      relation: "viewer",
      subject: { type: "user", id: String(j % 997), relation: "" },
    });
  }
  await store.write("t1", { tuples });
}
await store.close();
process.stdout.write(`loaded ${TUPLES} tuples in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);

// better-sqlite3 is @pemba/core's dependency (the SQLite store's driver)
interface Prepared {
  all(...params: unknown[]): unknown[];
}
const Database = createRequire(new URL("../packages/core/package.json", import.meta.url))(
  "better-sqlite3",
) as new (
  file: string,
  opts: { readonly: boolean },
) => { prepare(sql: string): Prepared; close(): void };
const db = new Database(file, { readonly: true });
// prepared once per SQL text, as SqliteStore caches them
const prepared = new Map<string, Prepared>();
const prepare = (sql: string) => {
  let st = prepared.get(sql);
  if (st === undefined) {
    st = db.prepare(sql);
    prepared.set(sql, st);
  }
  return st;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Statements per second over one window, cycling through distinct key sets. */
function window(dialect: typeof sqliteDialect, keys: number): number {
  let n = 0;
  const end = performance.now() + WINDOW_MS;
  while (performance.now() < end) {
    const first = (n * keys) % (TUPLES - keys);
    const ids = Array.from({ length: keys }, (_, i) => String(first + i));
    const s = queryTuplesStatement(
      dialect,
      "t1",
      TUPLES,
      [{ entityType: "doc", entityIds: ids, relations: ["viewer"] }],
      Date.now(),
    );
    const rows = prepare(s.sql).all(...s.params);
    if (rows.length !== keys) throw new Error(`expected ${keys} rows, got ${rows.length}`);
    n++;
  }
  return (n * 1000) / WINDOW_MS;
}

process.stdout.write("keys  VALUES/s  json_each/s  json_each/VALUES  (medians of alternating windows)\n");
for (const keys of [16, 50, 300]) {
  const a: number[] = [];
  const b: number[] = [];
  for (let w = 0; w < WINDOWS; w++) {
    if (w % 2 === 0) {
      a.push(window(sqliteDialect, keys));
      b.push(window(d1Dialect, keys));
    } else {
      b.push(window(d1Dialect, keys));
      a.push(window(sqliteDialect, keys));
    }
  }
  const [va, vb] = [median(a), median(b)];
  process.stdout.write(
    `${String(keys).padStart(4)}  ${va.toFixed(0).padStart(8)}  ${vb.toFixed(0).padStart(11)}  ${(vb / va).toFixed(2).padStart(16)}\n`,
  );
}
db.close();
rmSync(dir, { recursive: true, force: true });
