/**
 * The engine's and the replica's CPU per hot check, without HTTP: `PembaService.check` over `ReplicaStore.open` (the
 * Node server's working set) over a MemoryStore holding Permify's seed dataset, every key of the drawn ids held
 * after a warm-up. With --before <checkout>, that checkout's sources run the same checks in the same process, in
 * alternating windows (the order turns each round), so the two trees' figures are comparable on a busy machine.
 *
 *   node --experimental-strip-types --no-warnings loadtest/bench-replica-checks.ts [--ids 100000]
 *        [--hot-ids 1000] [--checks 200000] [--rounds 7] [--before <checkout>]
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { loadAverage } from "./lib/report.ts";
import { SEED_SCHEMA } from "./lib/seed.ts";
import { checkMix, seedMemoryStore } from "./lib/seed-memory.ts";
import { REPO_DIR } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "100000" },
    "hot-ids": { type: "string", default: "1000" },
    checks: { type: "string", default: "200000" },
    rounds: { type: "string", default: "7" },
    before: { type: "string" },
  },
});
const CHECKS = Number(values.checks);
const TENANT = "t1";
const say = (text: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${text}\n`);

interface Target {
  name: string;
  check(q: unknown): unknown;
}

async function target(name: string, checkout: string): Promise<Target> {
  const core = (await import(
    pathToFileURL(resolve(checkout, "packages/core/src/index.ts")).href
  )) as typeof import("@pemba/core");
  const inner = new core.MemoryStore();
  await seedMemoryStore(inner as never, TENANT, Number(values.ids));
  const replica = await core.ReplicaStore.open(inner, { refreshMs: 0 });
  const service = new core.PembaService(replica);
  const schemaVersion = await service.writeSchema(TENANT, SEED_SCHEMA);
  const meta = { schemaVersion, snapToken: "", depth: 20 };
  return { name, check: (q) => service.check(TENANT, meta, q as never) };
}

const targets = [await target("this", REPO_DIR)];
if (values.before !== undefined) targets.push(await target("before", values.before));
const checks = checkMix(Number(values["hot-ids"]), CHECKS);
say(`load average before: ${loadAverage()}`);

/** Runs every check (awaiting only answers that are promises: fills); answers CPU µs per check. */
async function window(t: Target): Promise<number> {
  const start = process.cpuUsage();
  for (const q of checks) {
    const outcome = t.check(q);
    if (outcome instanceof Promise) await outcome;
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / checks.length;
}

for (const t of targets) await window(t); // warm-up: fills every hot key
const figures = new Map<string, number[]>(targets.map((t) => [t.name, []]));
for (let round = 1; round <= Number(values.rounds); round++) {
  const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
  const line: string[] = [];
  for (const t of order) {
    const us = await window(t);
    figures.get(t.name)!.push(us);
    line.push(`${t.name} ${us.toFixed(2)} µs`);
  }
  say(`round ${round}: ${line.join("; ")}; load ${loadAverage()}`);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [name, xs] of figures)
  say(`${name}: median ${median(xs).toFixed(2)} µs/check (${xs.map((x) => x.toFixed(2)).join(", ")})`);
if (targets.length === 2) {
  const ratios = figures.get("this")!.map((x, i) => x / figures.get("before")![i]!);
  say(`this / before: median ${median(ratios).toFixed(3)} (${ratios.map((r) => r.toFixed(2)).join(", ")})`);
}
