/**
 * Pemba's own CPU per check, measured in one process: the Node server's entry (`startServer` of
 * packages/node-server, what `pemba serve` runs) and a bare node:http server (bare-server.ts's listener) listen in
 * this process, and a light client in the same process (raw keep-alive connections, lib/raw-client.ts) sends the
 * same checks to each in turn, a fixed number with a fixed number in flight. The process's CPU time (user +
 * system) per check is taken for each; the client's share and node:http's are the same in both, so
 * `pemba - bare` is what Pemba adds per check (the issue's allowance: about 20 µs above a bare server's ~40 µs),
 * and a busy machine hardly moves it (CPU time, not wall time; one thread).
 *
 *   node --experimental-strip-types --no-warnings loadtest/bench-check-inprocess.ts [--checks 20000]
 *        [--in-flight 16] [--rounds 5] [--total-ids 100000] [--hot-ids 1000] [--draws hot,seed]
 *        [--before <checkout>] [--cpu-prof <dir>] >/dev/null
 *
 * The servers' request logs go to stdout (send it to /dev/null); the results are printed on stderr. --before
 * <checkout> also starts that checkout's `startServer` (its sources, in this process) over the same SQLite file.
 * The hot draw takes ids below --hot-ids (the replica's working set holds them after the warm-up: no SQLite read);
 * the seed draw ids below --total-ids (Permify's check script). --cpu-prof <dir> writes a V8 CPU profile of every
 * measured window of each Pemba target (`<dir>/<target>.cpuprofile`, the windows only: no seeding, no warm-up,
 * no bare windows); read it with profile-summary.ts (divide by the checks: --rounds x --checks per draw).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { Session } from "node:inspector/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { fastSeed } from "./lib/fast-seed.ts";
import { Connection, checkRequests } from "./lib/raw-client.ts";
import { loadAverage } from "./lib/report.ts";
import { REPO_DIR } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    checks: { type: "string", default: "20000" },
    "in-flight": { type: "string", default: "16" },
    rounds: { type: "string", default: "5" },
    "total-ids": { type: "string", default: "100000" },
    "hot-ids": { type: "string", default: "1000" },
    draws: { type: "string", default: "hot,seed" },
    before: { type: "string" },
    "cpu-prof": { type: "string" },
  },
});
const CHECKS = Number(values.checks);
const IN_FLIGHT = Number(values["in-flight"]);
const say = (text: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${text}\n`);

interface Target {
  name: string;
  port: number;
  close(): Promise<void>;
}

/** bare-server.ts's listener. */
async function bare(): Promise<Target> {
  const body = JSON.stringify({ can: "CHECK_RESULT_ALLOWED", metadata: { check_count: 0 } });
  const server: Server = createServer((request, response) => {
    request.on("data", () => {});
    request.on("end", () => {
      response.writeHead(200, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
      });
      response.end(body);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    name: "bare",
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((done) => server.close(() => done())),
  };
}

/** `startServer` of a checkout (this one by default) on `database`. */
async function pemba(name: string, database: string, checkout = REPO_DIR): Promise<Target> {
  const entry = pathToFileURL(resolve(checkout, "packages/node-server/src/index.ts")).href;
  const { startServer } = (await import(entry)) as typeof import("@pemba/node-server");
  const server = await startServer({ database, host: "127.0.0.1", port: 0, logLevel: "info" });
  return { name, port: Number(new URL(server.url).port), close: () => server.close() };
}

/** Sends `requests` (cycled) until `count` are answered, `IN_FLIGHT` at a time; the process's CPU µs per answer. */
async function run(
  target: Target,
  requests: Buffer[],
  count: number,
): Promise<{ us: number; failed: number }> {
  const connections = Array.from({ length: IN_FLIGHT }, () => new Connection(target.port));
  await Promise.all(connections.map((c) => c.ready()));
  let sent = 0;
  let answered = 0;
  let failed = 0;
  const before = process.cpuUsage();
  await new Promise<void>((done) => {
    for (const c of connections) {
      c.onAnswer = (ok) => {
        answered++;
        if (!ok) failed++;
        if (sent < count) c.send(requests[sent++ % requests.length]!);
        else if (answered === count) done();
      };
      c.send(requests[sent++ % requests.length]!);
    }
  });
  const cpu = process.cpuUsage(before);
  for (const c of connections) c.close();
  return { us: (cpu.user + cpu.system) / count, failed };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const dir = mkdtempSync(join(tmpdir(), "pemba-inprocess-"));
const database = join(dir, "pemba.db");
const targets: Target[] = [];
try {
  say(`load average before: ${loadAverage()}`);
  const seeded = await fastSeed(database, Number(values["total-ids"]));
  say(`seeded ${seeded.tuples} tuples + ${seeded.attributes} attributes`);
  targets.push(await bare(), await pemba("pemba", database));
  if (values.before !== undefined) targets.push(await pemba("before", database, values.before));
  const draws = {
    hot: (t: Target) => checkRequests(`127.0.0.1:${t.port}`, seeded.schemaVersion, Number(values["hot-ids"])),
    seed: (t: Target) =>
      checkRequests(`127.0.0.1:${t.port}`, seeded.schemaVersion, Number(values["total-ids"])),
  };
  const kinds = values.draws!.split(",") as (keyof typeof draws)[];
  for (const t of targets) {
    // warm-up: the JIT, and the hot ids into the working set
    const warm = await run(t, draws.hot(t), CHECKS);
    if (warm.failed > 0) throw new Error(`${t.name}: ${warm.failed} checks failed`);
  }
  let profiler: Session | undefined;
  const profiles = new Map<string, object[]>();
  if (values["cpu-prof"] !== undefined) {
    profiler = new Session();
    profiler.connect();
    await profiler.post("Profiler.enable");
    await profiler.post("Profiler.setSamplingInterval", { interval: 100 });
  }
  const results = new Map<string, number[]>();
  const note = (key: string, x: number) => results.set(key, [...(results.get(key) ?? []), x]);
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const kind of kinds) {
      const line: string[] = [];
      let bareUs = Number.NaN;
      // the order turns each round, so that no server always runs after the same one
      const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
      const measured = new Map<string, number>();
      for (const t of order) {
        const profiled = t.name === "bare" ? undefined : profiler;
        if (profiled !== undefined) await profiled.post("Profiler.start");
        const { us, failed } = await run(t, draws[kind](t), CHECKS);
        if (profiled !== undefined) {
          const { profile } = await profiled.post("Profiler.stop");
          profiles.set(t.name, [...(profiles.get(t.name) ?? []), profile]);
        }
        if (failed > 0) throw new Error(`${t.name}: ${failed} checks failed`);
        measured.set(t.name, us);
      }
      bareUs = measured.get("bare")!;
      for (const [name, us] of measured) {
        note(`${kind} ${name} µs/check`, us);
        if (name === "bare") continue;
        note(`${kind} ${name} - bare µs`, us - bareUs);
        note(`${kind} ${name} / bare`, us / bareUs);
        line.push(`${name} ${us.toFixed(1)} (+${(us - bareUs).toFixed(1)}, ${(us / bareUs).toFixed(2)}x)`);
      }
      say(`round ${round} ${kind}: bare ${bareUs.toFixed(1)} µs; ${line.join("; ")}; load ${loadAverage()}`);
    }
  }
  process.stderr.write("\n== medians of the rounds (process CPU per check: the client's share included)\n");
  for (const [key, xs] of results) {
    process.stderr.write(`${key}: ${median(xs).toFixed(2)} (${xs.map((x) => x.toFixed(1)).join(", ")})\n`);
  }
  for (const [name, list] of profiles) {
    writeFileSync(join(values["cpu-prof"]!, `${name}.cpuprofile`), JSON.stringify(mergeProfiles(list)));
  }
  say(`load average after: ${loadAverage()}`);
} finally {
  for (const t of targets) await t.close();
  rmSync(dir, { recursive: true, force: true });
}

interface ProfileNode {
  id: number;
  children?: number[];
  [key: string]: unknown;
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Several windows' profiles as one (node ids renumbered; the time between windows left out). */
function mergeProfiles(list: object[]): CpuProfile {
  const merged: CpuProfile = { nodes: [], samples: [], timeDeltas: [], startTime: 0, endTime: 0 };
  let offset = 0;
  for (const p of list as CpuProfile[]) {
    let top = 0;
    for (const n of p.nodes) {
      merged.nodes.push({ ...n, id: n.id + offset, children: n.children?.map((c) => c + offset) });
      top = Math.max(top, n.id);
    }
    merged.samples.push(...p.samples.map((id) => id + offset));
    merged.timeDeltas.push(...p.timeDeltas.map((d, i) => (i === 0 ? 0 : d)));
    merged.endTime += p.endTime - p.startTime;
    offset += top + 1;
  }
  return merged;
}
