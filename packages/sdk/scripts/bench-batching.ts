/**
 * @pemba/sdk automatic batching: 1,000 concurrent `check()` calls against a real `pemba serve` (SQLite file),
 * with batching (bulk checks of 100) and without (one request per check). Prints, per mode, the requests sent, the
 * time until all 1,000 answered, and the p50/p99 of one call's latency; paired rounds alternate the order
 * (A/B, B/A, ...) and the summary is the median over rounds. Both modes must give the same 1,000 answers.
 *
 *   node packages/sdk/scripts/bench-batching.ts [--rounds 7] [--checks 1000]
 */
import { parseArgs } from "node:util";
import { startScratchServe } from "@pemba/node-server/testing";
import { createClient } from "../src/index.ts";

const { values } = parseArgs({ options: { rounds: { type: "string" }, checks: { type: "string" } } });
const ROUNDS = Number(values.rounds ?? 7);
const CHECKS = Number(values.checks ?? 1000);

const SCHEMA = `entity user {}
entity team {
  relation member @user
}
entity document {
  relation team @team
  relation owner @user
  permission view = owner or team.member
}`;

interface Round {
  requests: number;
  totalMs: number;
  p50: number;
  p99: number;
  answers: string;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.ceil((xs.length * p) / 100) - 1];

async function round(url: string, batched: boolean): Promise<Round> {
  let requests = 0;
  const client = createClient({
    baseUrl: url,
    batchChecks: batched,
    fetch: (input, init) => {
      requests++;
      return fetch(input, init);
    },
  });
  const latencies: number[] = [];
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: CHECKS }, async (_, i) => {
      const t0 = performance.now();
      const res = await client.check({
        entity: { type: "document", id: `d${i}` },
        permission: "view",
        subject: { type: "user", id: `u${i % 50}` },
      });
      latencies.push(performance.now() - t0);
      return res.can === "CHECK_RESULT_ALLOWED" ? "1" : "0";
    }),
  );
  return {
    requests,
    totalMs: performance.now() - started,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    answers: answers.join(""),
  };
}

const server = await startScratchServe(["--log-level", "warn"]);
try {
  const setup = createClient({ baseUrl: server.url });
  await setup.writeSchema(SCHEMA);
  // Every third document is owned by its user, every fifth reachable through a team; the rest are denied.
  const tuples = [];
  for (let i = 0; i < CHECKS; i++) {
    const doc = { type: "document", id: `d${i}` };
    if (i % 3 === 0)
      tuples.push({ entity: doc, relation: "owner", subject: { type: "user", id: `u${i % 50}` } });
    if (i % 5 === 0)
      tuples.push({ entity: doc, relation: "team", subject: { type: "team", id: `t${i % 7}` } });
  }
  for (let t = 0; t < 7; t++) {
    tuples.push({
      entity: { type: "team", id: `t${t}` },
      relation: "member",
      subject: { type: "user", id: `u${t}` },
    });
  }
  for (let i = 0; i < tuples.length; i += 1000) await setup.writeData({ tuples: tuples.slice(i, i + 1000) });

  // Warm-up (JIT, connections, the server's caches), not counted.
  await round(server.url, true);
  await round(server.url, false);

  const results: Record<"batched" | "unbatched", Round[]> = { batched: [], unbatched: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order: ("batched" | "unbatched")[] =
      r % 2 === 0 ? ["batched", "unbatched"] : ["unbatched", "batched"];
    for (const mode of order) {
      const res = await round(server.url, mode === "batched");
      results[mode].push(res);
      console.log(
        `round ${r + 1} ${mode.padEnd(9)} requests ${String(res.requests).padStart(4)}  all answered ${res.totalMs.toFixed(1).padStart(7)} ms  p50 ${res.p50.toFixed(1).padStart(6)} ms  p99 ${res.p99.toFixed(1).padStart(6)} ms`,
      );
    }
  }
  const reference = results.batched[0].answers;
  const agree = [...results.batched, ...results.unbatched].every((r) => r.answers === reference);
  const allowed = [...reference].filter((c) => c === "1").length;
  console.log(`answers identical in every round and mode: ${agree} (${allowed} allowed of ${CHECKS})`);
  for (const mode of ["batched", "unbatched"] as const) {
    const rs = results[mode];
    console.log(
      `median ${mode.padEnd(9)} requests ${median(rs.map((r) => r.requests))}  all answered ${median(rs.map((r) => r.totalMs)).toFixed(1)} ms  p50 ${median(rs.map((r) => r.p50)).toFixed(1)} ms  p99 ${median(rs.map((r) => r.p99)).toFixed(1)} ms`,
    );
  }
  const b = median(results.batched.map((r) => r.totalMs));
  const u = median(results.unbatched.map((r) => r.totalMs));
  console.log(
    `requests saved: ${CHECKS - median(results.batched.map((r) => r.requests))} of ${CHECKS}; time to answer all: ${(u / b).toFixed(2)}x faster batched`,
  );
  if (!agree) process.exitCode = 1;
} finally {
  await server.close();
}
