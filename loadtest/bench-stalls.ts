/**
 * Adversarial requests against the core engine, in process: each prints how long it took, what it
 * answered and the heap growth. A request that used to stall the server must now answer (or be refused) quickly.
 *
 *   node loadtest/bench-stalls.ts [--watch-seconds 5]
 *
 * The watch case opens 300 idle streams on a SQLite store and prints the store reads per second and the process
 * CPU while they wait.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { EvaluationTarget } from "@pemba/core";
import {
  check,
  compileSchema,
  EvaluationPool,
  expand,
  MemoryStore,
  parseSchema,
  parseTupleString,
  WatchHub,
} from "@pemba/core";
import { SqliteStore } from "@pemba/core/node";

const { values } = parseArgs({ options: { "watch-seconds": { type: "string" } } });
const WATCH_SECONDS = Number(values["watch-seconds"] ?? 5);
const T = "t1";

async function world(schema: string, tuples: string[] = []) {
  const compiled = compileSchema(parseSchema(schema));
  const store = new MemoryStore();
  if (tuples.length > 0) await store.write(T, { tuples: tuples.map(parseTupleString), attributes: [] });
  const evaluations = new EvaluationPool();
  const target = (extra: Partial<EvaluationTarget> = {}): EvaluationTarget => ({
    store,
    tenantId: T,
    snap: store.headSnap(T),
    depth: 100_000,
    evaluations,
    ...extra,
  });
  return { compiled, target };
}

async function measure(name: string, run: () => unknown): Promise<void> {
  const heap = process.memoryUsage().heapUsed;
  const started = performance.now();
  let outcome: string;
  try {
    const out = await run();
    outcome = `answered ${JSON.stringify(out).slice(0, 60)}`;
  } catch (e) {
    const err = e as { code?: string; grpcCode?: number; message?: string };
    outcome = `refused ${err.code ?? ""} (gRPC ${err.grpcCode ?? "?"}): ${String(err.message).slice(0, 70)}`;
  }
  const ms = performance.now() - started;
  const mb = (process.memoryUsage().heapUsed - heap) / 1048576;
  console.log(
    `${name.padEnd(52)} ${ms.toFixed(1).padStart(9)} ms ${mb.toFixed(1).padStart(7)} MB  ${outcome}`,
  );
}

const letters = (n: number) => `p_${n > 26 ? "z" : ""}${String.fromCharCode(96 + (n > 26 ? n - 26 : n))}`;
function doubling(levels: number): string {
  const lines = ["entity user {}", "entity doc {", "  relation a @user", "  relation b @user"];
  lines.push(`  permission ${letters(1)} = a or b`);
  for (let i = 2; i <= levels; i++)
    lines.push(`  permission ${letters(i)} = ${letters(i - 1)} and ${letters(i - 1)}`);
  lines.push("}");
  return lines.join("\n");
}

const doc1 = { type: "doc", id: "1" };
const user1 = { type: "user", id: "1", relation: "" };

for (const n of [15, 18, 40]) {
  const w = await world(doubling(n), ["doc:1#a@user:1"]);
  await measure(`expand, doubling permissions N=${n}`, async () => {
    const tree = await expand(w.compiled, w.target(), { entity: doc1, permission: letters(n) });
    return { operation: "expand" in tree ? tree.expand.operation : "leaf" };
  });
}

const RULES = `entity user {}
entity doc {
  attribute on boolean
  permission nested = nested_all(on)
  permission pattern = matches_pattern(on)
}
rule nested_all(on boolean) {
  context.data.l.all(x, context.data.l.all(y, context.data.l.all(z, x + y + z >= 0))) || on
}
rule matches_pattern(on boolean) {
  context.data.text.matches(context.data.pattern) || on
}`;
const rules = await world(RULES);
const items = Array.from({ length: 200 }, (_, i) => i);
await measure("CEL: nested all over a 200-item context list", () =>
  check(rules.compiled, rules.target({ context: { tuples: [], attributes: [], data: { l: items } } }), {
    entity: doc1,
    permission: "nested",
    subject: user1,
  }),
);
for (const length of [1024, 65536]) {
  const pattern = "[ab]{1,9}".repeat(Math.floor(length / 9));
  await measure(`CEL: matches with a ${length}-character pattern`, () =>
    check(
      rules.compiled,
      rules.target({ context: { tuples: [], attributes: [], data: { text: "ab".repeat(500), pattern } } }),
      { entity: doc1, permission: "pattern", subject: user1 },
    ),
  );
}

const CHAIN = `entity user {}
entity folder {
  relation parent @folder
  relation owner @user
  permission view = owner or parent.view
}`;
const chainTuples: string[] = [];
for (let i = 0; i < 4000; i++) chainTuples.push(`folder:${i}#parent@folder:${i + 1}`);
chainTuples.push("folder:4000#owner@user:1");
const chain = await world(CHAIN, chainTuples);
// twice: the first check on a new store also learns that the store answers synchronously
for (const run of ["first", "second"])
  await measure(`check, 4,000-hop parent chain, depth 100000 (${run})`, () =>
    check(chain.compiled, chain.target(), {
      entity: { type: "folder", id: "0" },
      permission: "view",
      subject: user1,
    }),
  );

const ctx = await world(CHAIN);
const contextTuples = Array.from({ length: 50_000 }, (_, i) => parseTupleString(`folder:1#owner@user:${i}`));
await measure("check with 50,000 contextual tuples on one read", () =>
  check(ctx.compiled, ctx.target({ context: { tuples: contextTuples, attributes: [], data: {} } }), {
    entity: { type: "folder", id: "1" },
    permission: "view",
    subject: { type: "user", id: "49999", relation: "" },
  }),
);

// 300 idle watch streams on SQLite
const dir = mkdtempSync(join(tmpdir(), "pemba-bench-stalls-"));
const store = SqliteStore.open(join(dir, "watch.db"));
let reads = 0;
const changes = store.changes.bind(store);
store.changes = (...args) => {
  reads++;
  return changes(...args);
};
const hub = new WatchHub(store);
const abort = new AbortController();
const streams = Array.from({ length: 300 }, () => hub.open(T, store.headSnap(T), { signal: abort.signal }));
const pending = streams.map((s) => s.next());
await new Promise((r) => setTimeout(r, 500));
const readsBefore = reads;
const cpuBefore = process.cpuUsage();
const started = performance.now();
await new Promise((r) => setTimeout(r, WATCH_SECONDS * 1000));
const cpu = process.cpuUsage(cpuBefore);
const seconds = (performance.now() - started) / 1000;
console.log(
  `${"300 idle watch streams (SQLite, 250 ms poll)".padEnd(52)} ${((reads - readsBefore) / seconds).toFixed(1)} store reads/s, CPU ${(((cpu.user + cpu.system) / 1e6 / seconds) * 100).toFixed(2)}% over ${seconds.toFixed(1)} s`,
);
abort.abort();
await Promise.all(pending);
await store.close();
rmSync(dir, { recursive: true, force: true });
