/**
 * The working set's byte estimate against the heap it really holds: every check key of Permify's dataset (8 rows
 * per id: 6 tuples, 2 attributes; one row per key) filled the way a cold read fills it, each row made as a SQL
 * driver makes it (every column its own new string, the key's id a string of the request), then the heap held after
 * a full collection. This is what calibrates the estimate's constants in working-set.ts: the heap held per
 * estimated byte should stay at or below 1, so a full working set holds no more than --replica-memory.
 *
 *   node --expose-gc --experimental-strip-types loadtest/working-set-memory.ts [--ids 50000] [--core <checkout>]
 *
 * --core: load working-set.ts from another checkout (before/after a change).
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { loadTestData } from "@pemba/core/testing";

const { values } = parseArgs({
  options: { ids: { type: "string", default: "50000" }, core: { type: "string" } },
});
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");
const file = resolve(
  values.core ?? resolve(import.meta.dirname, ".."),
  "packages/core/src/store/proxies/replica/working-set.ts",
);
const { TenantKeys, WorkingSetBudget } = (await import(file)) as Pick<
  typeof import("@pemba/core/testing"),
  "TenantKeys" | "WorkingSetBudget"
>;

/** A new flat string of the same text, as a driver's row or a parsed request gives it. */
const fresh = (text: string) => Buffer.from(text).toString();
const held = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

const ids = Number(values.ids);
const budget = new WorkingSetBudget(Number.MAX_SAFE_INTEGER);
const keys = new TenantKeys(budget);
const before = held();
const { tuples, attributes } = loadTestData(ids);
for (const t of tuples) {
  const row = {
    entity: { type: fresh(t.entity.type), id: fresh(t.entity.id) },
    relation: fresh(t.relation),
    subject: { type: fresh(t.subject.type), id: fresh(t.subject.id), relation: fresh(t.subject.relation) },
  };
  const query = {
    entityType: fresh(t.entity.type),
    entityIds: [fresh(t.entity.id)],
    relations: [fresh(t.relation)],
  };
  keys.fileAll(keys.tupleEntries([query], [row], 1));
}
for (const a of attributes) {
  const row = {
    entity: { type: fresh(a.entity.type), id: fresh(a.entity.id) },
    attribute: fresh(a.attribute),
    value: { type: fresh(a.value.type) as typeof a.value.type, data: a.value.data },
  };
  const query = {
    entityType: fresh(a.entity.type),
    entityIds: [fresh(a.entity.id)],
    attributes: [fresh(a.attribute)],
  };
  keys.fileAll(keys.attributeEntries([query], [row], 1)[0]);
}
tuples.length = 0;
attributes.length = 0;
const bytes = held() - before;
const mb = (b: number) => (b / 1048576).toFixed(1);
console.log(
  `${ids} ids: ${budget.entries} keys, estimate ${mb(budget.bytes)} MB, heap held ${mb(bytes)} MB ` +
    `(${Math.round(bytes / budget.entries)} bytes per key), held / estimate ${(bytes / budget.bytes).toFixed(2)}`,
);
