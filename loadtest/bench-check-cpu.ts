/**
 * CPU per check of `pemba serve` (the bundled CLI, SQLite, Permify's seed dataset written by fast-seed.ts) against
 * the bare node:http server (bare-server.ts), with a light client: raw keep-alive TCP connections in this process
 * that send pre-built check requests at a fixed rate (k6 itself takes about a core at 2,000/s, which on a 2-core
 * machine starves the servers it measures). Windows alternate between the servers (bare, pemba, [before], bare, ...)
 * and each round's ratio compares adjacent windows; server CPU = user + system of the server process (/proc).
 *
 *   node --experimental-strip-types --no-warnings loadtest/bench-check-cpu.ts [--rate 2000] [--seconds 10]
 *        [--rounds 5] [--total-ids 100000] [--hot-ids 1000] [--connections 64] [--before <checkout>]
 *        [--draws hot,seed] [--other="<flags>"] [--cpu-prof-dir <dir>] [--log-level info]
 *
 * Each round measures the seed draw (entity and subject ids uniform over --total-ids, as Permify's check script) and
 * the hot draw (ids uniform over the first --hot-ids: keys the replica's working set holds after the warm-up, so
 * the check reads no SQLite). --before <checkout> adds `pemba serve` of another checkout (its bundled CLI, over the
 * same SQLite file) as a third server: before/after in the same windows. --other="<flags>" adds `pemba serve` of this
 * checkout with more flags (e.g. "--log-level warn": what the access log costs).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fastSeed } from "./lib/fast-seed.ts";
import { cpuSplit } from "./lib/proc.ts";
import { Connection, checkRequests as requests } from "./lib/raw-client.ts";
import { loadAverage } from "./lib/report.ts";
import { spotCheck } from "./lib/seed.ts";
import { type ServerProcess, startBareServer, startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "2000" },
    seconds: { type: "string", default: "10" },
    rounds: { type: "string", default: "5" },
    "total-ids": { type: "string", default: "100000" },
    "hot-ids": { type: "string", default: "1000" },
    connections: { type: "string", default: "64" },
    before: { type: "string" },
    other: { type: "string" },
    draws: { type: "string", default: "hot,seed" },
    "cpu-prof-dir": { type: "string" },
    "log-level": { type: "string", default: "info" },
  },
});
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const TOTAL_IDS = Number(values["total-ids"]);
const HOT_IDS = Number(values["hot-ids"]);
const CONNECTIONS = Number(values.connections);
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

interface Window {
  answered: number;
  /** Requests not sent because every connection was waiting for an answer. */
  dropped: number;
  /** Answers other than 200 with a decision. */
  failed: number;
  cpuPerRequestUs: number;
  /** The part of it in the kernel (system time: socket reads and writes, mostly). */
  systemPerRequestUs: number;
}

async function window(server: ServerProcess, draw: Buffer[], seconds: number): Promise<Window> {
  const port = Number(new URL(server.url).port);
  const connections = Array.from({ length: CONNECTIONS }, () => new Connection(port));
  await Promise.all(connections.map((c) => c.ready()));
  let answered = 0;
  let failed = 0;
  let dropped = 0;
  let next = 0;
  for (const c of connections) {
    c.onAnswer = (ok) => {
      answered++;
      if (!ok) failed++;
    };
  }
  const cpuBefore = cpuSplit(server.pid);
  const started = performance.now();
  const total = Math.round(RATE * seconds);
  let sent = 0;
  await new Promise<void>((done) => {
    // every millisecond, the requests due by now (a timer fires late on a busy machine: the backlog is sent)
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - started) * RATE) / 1000));
      while (sent + dropped < due) {
        const free = connections.find((c) => !c.busy);
        if (free === undefined) {
          dropped++;
          continue;
        }
        free.send(draw[next++ % draw.length]!);
        sent++;
      }
      if (sent + dropped >= total && connections.every((c) => !c.busy)) {
        clearInterval(timer);
        done();
      }
    }, 1);
  });
  const cpuAfter = cpuSplit(server.pid);
  for (const c of connections) c.close();
  const perRequest = (seconds: number) => (1e6 * seconds) / Math.max(1, answered);
  return {
    answered,
    dropped,
    failed,
    cpuPerRequestUs: perRequest(cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system),
    systemPerRequestUs: perRequest(cpuAfter.system - cpuBefore.system),
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const dir = mkdtempSync(join(tmpdir(), "pemba-bench-cpu-"));
const database = join(dir, "pemba.db");
const servers: { name: string; server: ServerProcess }[] = [];
try {
  log(`load average before: ${loadAverage()} (${cpus().length} CPUs)`);
  const seeded = await fastSeed(database, TOTAL_IDS);
  log(`seeded ${seeded.tuples} tuples + ${seeded.attributes} attributes in ${seeded.seconds.toFixed(1)} s`);
  const profile = values["cpu-prof-dir"];
  const serve = (repo?: string, args: string[] = []) =>
    startPemba(
      database,
      ["--log-level", values["log-level"]!, ...args],
      profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : [],
      repo,
    );
  servers.push({ name: "bare", server: await startBareServer() });
  servers.push({ name: "pemba", server: await serve() });
  if (values.before !== undefined) servers.push({ name: "before", server: await serve(values.before) });
  if (values.other !== undefined) {
    servers.push({
      name: "other",
      server: await serve(
        undefined,
        values.other.split(" ").filter((a) => a !== ""),
      ),
    });
  }
  for (const { name, server } of servers.slice(1)) {
    log(`${name}: pid ${server.pid}; spot checks ${await spotCheck(server.url, seeded.schemaVersion)}`);
  }
  const host = (s: ServerProcess) => new URL(s.url).host;
  const draws = {
    seed: (s: ServerProcess) => requests(host(s), seeded.schemaVersion, TOTAL_IDS),
    hot: (s: ServerProcess) => requests(host(s), seeded.schemaVersion, HOT_IDS),
  };
  // warm-up: the JIT, and the hot ids into the working set
  for (const { server } of servers) {
    await window(server, draws.hot(server), 5);
    await window(server, draws.seed(server), 3);
  }
  const costs = new Map<string, number[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const kind of values.draws!.split(",") as ("hot" | "seed")[]) {
      const line: string[] = [];
      let bare = Number.NaN;
      // each round starts with another server after the bare one, so neither always follows the bare window
      const order = [servers[0]!, ...rotate(servers.slice(1), round)];
      for (const { name, server } of order) {
        const w = await window(server, draws[kind](server), SECONDS);
        if (name === "bare") bare = w.cpuPerRequestUs;
        const key = `${kind} ${name}`;
        costs.set(key, [...(costs.get(key) ?? []), w.cpuPerRequestUs]);
        if (name !== "bare")
          costs.set(`${key} ratio`, [...(costs.get(`${key} ratio`) ?? []), w.cpuPerRequestUs / bare]);
        const lost = w.failed + w.dropped > 0 ? ` (failed ${w.failed}, dropped ${w.dropped})` : "";
        costs.set(`${key} system`, [...(costs.get(`${key} system`) ?? []), w.systemPerRequestUs]);
        line.push(
          `${name} ${w.cpuPerRequestUs.toFixed(1)} us (sys ${w.systemPerRequestUs.toFixed(1)})${name === "bare" ? "" : ` ${(w.cpuPerRequestUs / bare).toFixed(2)}x`}${lost}`,
        );
      }
      log(`round ${round} ${kind}: ${line.join("; ")}; load ${loadAverage()}`);
    }
  }
  console.log("\n== results (medians of the rounds)");
  for (const [key, xs] of costs) {
    const unit = key.endsWith("ratio") ? "x" : " us";
    console.log(`${key}: ${median(xs).toFixed(2)}${unit} (${xs.map((x) => x.toFixed(2)).join(", ")})`);
  }
  log(`load average after: ${loadAverage()}`);
} finally {
  for (const { server } of servers) await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

function rotate<T>(xs: T[], by: number): T[] {
  const k = by % Math.max(1, xs.length);
  return [...xs.slice(k), ...xs.slice(0, k)];
}
