/**
 * Explain vs check CPU (the budget: explain at most 3x a check's CPU), in-process on a MemoryStore with
 * Permify's seed dataset and the k6 check script's request mix, single-threaded.
 *
 *   node loadtest/bench-explain.ts [--ids 100000] [--seconds 2] [--rounds 5] [--http] [--requests 4000]
 *
 * Engine: each round runs the same query list through `check`, then `explain`, then `explain` + JSON.stringify
 * (what the HTTP route adds), for `--seconds` each, and takes CPU time (user + system, process.cpuUsage) per call;
 * the medians of the rounds and their ratios to check are printed. Before timing, every query's explain decision
 * is compared with check's.
 *
 * --http: the same over HTTP, as a client sees it: `pemba serve --database memory:` as a child process, seeded by
 * Permify's k6 seed writer, then rounds of `--requests` check requests and as many explain requests (the same
 * bodies, 16 in flight over keep-alive), CPU of the server process per request (/proc/<pid>/stat).
 */
import { parseArgs } from "node:util";
import { check, compileSchema, EvaluationPool, explain, MemoryStore, parseSchema } from "@pemba/core";
import { cpuSeconds } from "./lib/proc.ts";
import { SEED_SCHEMA, seed, writeSeedSchema } from "./lib/seed.ts";
import { checkMix, memoryTarget, seedMemoryStore } from "./lib/seed-memory.ts";
import { startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "100000" },
    seconds: { type: "string", default: "2" },
    rounds: { type: "string", default: "5" },
    http: { type: "boolean", default: false },
    requests: { type: "string", default: "4000" },
  },
});
const N = Number(values.ids);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const TENANT = "t1";

const compiled = compileSchema(parseSchema(SEED_SCHEMA));
const store = new MemoryStore();
await seedMemoryStore(store, TENANT, N);
const QUERIES = 1 << 14;
const queries = checkMix(N, QUERIES);
const target = memoryTarget(store, TENANT);
const explainTarget = { ...target, schema: compiled, evaluations: new EvaluationPool() };

// explain decides as check does, on every query of the list
let allowed = 0;
let nodes = 0;
const count = (n: { children: unknown[] }): number =>
  1 + (n.children as { children: unknown[] }[]).reduce((s, c) => s + count(c), 0);
for (const q of queries) {
  const c = check(compiled, target, q) as { can: string };
  const e = await explain(explainTarget, q);
  if (e.can !== c.can) throw new Error(`explain ${e.can} != check ${c.can} for ${JSON.stringify(q)}`);
  if (e.can === "CHECK_RESULT_ALLOWED") allowed++;
  nodes += count(e.proof);
}

/** CPU microseconds per call of `op` over the query list, for `seconds`. */
async function cpuPerCall(op: (i: number) => unknown, seconds: number): Promise<number> {
  let n = 0;
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  const cpu = process.cpuUsage();
  while (process.hrtime.bigint() < end) {
    for (let k = 0; k < 256; k++) {
      const r = op((n + k) & (QUERIES - 1));
      if (r instanceof Promise) await r;
    }
    n += 256;
  }
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / n;
}

const ops = {
  check: (i: number) => check(compiled, target, queries[i]),
  explain: (i: number) => explain(explainTarget, queries[i]),
  explainJson: async (i: number) => JSON.stringify(await explain(explainTarget, queries[i])),
};
for (const op of Object.values(ops)) await cpuPerCall(op, 1); // warm-up
const samples: Record<keyof typeof ops, number[]> = { check: [], explain: [], explainJson: [] };
for (let r = 0; r < ROUNDS; r++)
  for (const [name, op] of Object.entries(ops) as [keyof typeof ops, (i: number) => unknown][])
    samples[name].push(await cpuPerCall(op, SECONDS));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round3 = (x: number) => Number(x.toFixed(3));
const cpu = {
  check: round3(median(samples.check)),
  explain: round3(median(samples.explain)),
  explainJson: round3(median(samples.explainJson)),
};
/** Server CPU per request over HTTP (--http), check vs explain on the same bodies. */
async function overHttp(): Promise<Record<string, unknown>> {
  const server = await startPemba("memory:");
  try {
    const version = await writeSeedSchema(server.url);
    const seeded = await seed(server.url, version, () => {}, { totalIds: N });
    const REQUESTS = Number(values.requests);
    const bodies = checkMix(N, REQUESTS).map((q) => JSON.stringify({ metadata: { depth: 20 }, ...q }));
    const send = async (path: string): Promise<number> => {
      const url = `${server.url}/v1/tenants/t1/permissions/${path}`;
      let next = 0;
      const worker = async () => {
        while (next < bodies.length) {
          const body = bodies[next++];
          const r = await fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          });
          if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
          await r.arrayBuffer();
        }
      };
      const before = cpuSeconds(server.pid);
      await Promise.all(Array.from({ length: 16 }, worker));
      return ((cpuSeconds(server.pid) - before) * 1e6) / bodies.length;
    };
    await send("check"); // warm-up
    await send("explain");
    const http: Record<"check" | "explain", number[]> = { check: [], explain: [] };
    for (let r = 0; r < ROUNDS; r++) {
      http.check.push(await send("check"));
      http.explain.push(await send("explain"));
    }
    const check = median(http.check);
    const explain = median(http.explain);
    return {
      seedSeconds: round3(seeded.seconds),
      requestsPerRound: REQUESTS,
      serverCpuMicrosPerRequest: { check: Math.round(check), explain: Math.round(explain) },
      ratioToCheck: round3(explain / check),
      rounds: { check: http.check.map(Math.round), explain: http.explain.map(Math.round) },
    };
  } finally {
    await server.stop();
  }
}

console.log(
  JSON.stringify(
    {
      ids: N,
      queries: QUERIES,
      allowedShare: round3(allowed / QUERIES),
      meanProofNodes: round3(nodes / QUERIES),
      cpuMicrosPerCall: cpu,
      ratioToCheck: {
        explain: round3(cpu.explain / cpu.check),
        explainJson: round3(cpu.explainJson / cpu.check),
      },
      rounds: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v.map(round3)])),
      ...(values.http ? { http: await overHttp() } : {}),
      node: process.version,
    },
    null,
    2,
  ),
);
