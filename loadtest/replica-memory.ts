/**
 * Memory per row of the in-memory replica's copy (a MemoryStore filled the way the replica loads it: change sets
 * of live rows), with Permify's load-test dataset: 8 rows per id (6 tuples, 2 attributes). Sizes the Worker's
 * default PEMBA_REPLICA_MAX_ROWS for a 128 MB isolate.
 *
 *   node --expose-gc loadtest/replica-memory.ts [--ids 25000,50000,100000]
 *
 * Prints, per size: rows, JS heap + ArrayBuffer bytes held after a full GC, bytes per row.
 */
import { parseArgs } from "node:util";
import type { DataChange } from "@pemba/core";
import { MemoryStore } from "@pemba/core";
import { loadTestData } from "@pemba/core/testing";

const { values } = parseArgs({ options: { ids: { type: "string", default: "25000,50000,100000" } } });
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");

const held = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

for (const ids of values.ids.split(",").map(Number)) {
  const before = held();
  const { tuples, attributes } = loadTestData(ids);
  const changes: DataChange[] = [
    ...tuples.map((tuple): DataChange => ({ operation: "OPERATION_CREATE", tuple })),
    ...attributes.map((attribute): DataChange => ({ operation: "OPERATION_CREATE", attribute })),
  ];
  const rows = changes.length;
  // the replica loads a page of 10,000 rows per change set; the input rows are built (and counted) before
  const pages = [];
  for (let i = 0; i < rows; i += 10_000) pages.push(changes.slice(i, i + 10_000));
  tuples.length = 0;
  attributes.length = 0;
  const store = new MemoryStore();
  const started = performance.now();
  for (let i = 0; i < pages.length; i++) store.applyChangeSet("t1", { snap: i + 1, changes: pages[i] });
  const ms = performance.now() - started;
  pages.length = 0;
  changes.length = 0;
  const after = held();
  const bytes = after - before;
  console.log(
    `${ids} ids: ${rows} rows, ${(bytes / 1048576).toFixed(1)} MiB held, ${Math.round(bytes / rows)} bytes/row, applied in ${Math.round(ms)} ms`,
  );
  void store.close();
}
