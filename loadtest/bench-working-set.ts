/**
 * The working-set replica against the whole-tenant replica, A/B in alternating rounds: Permify's dataset (at --ids
 * ids: 8 rows per id; --seed fast writes the seed writer's rows with set-based SQL (lib/fast-seed.ts), --seed http
 * runs the k6 seed writer) on one SQLite file or one throwaway PostgreSQL server (--store), then per round each
 * server on that database in turn:
 * startup to the first answered check, a Zipf (s = --zipf) open-model check load (k6 check-open-model.js) at --rate
 * for --duration (after --warmup of the same load, not measured), the server's CPU per answered check, p50/p99,
 * RSS after and its peak since the server started. --hot <n>: the checks draw from the first n ids only (every key warm after the warm-up: the cost of
 * hot keys).
 *
 *   node --experimental-strip-types loadtest/bench-working-set.ts [--ids 100000] [--rate 2000] [--duration 60s]
 *     [--warmup 0s] [--rounds 2] [--zipf 1.0] [--memory 256[,32,...]] [--store sqlite|postgres] [--seed fast|http]
 *     [--only A|B] [--database <seeded file or URL>] --base <checkout of main> [--base-args "--replica-max-rows 20000000"]
 *
 * --database: a database a former run seeded (kept with --keep, which prints it; PostgreSQL then stays running,
 * stop it with `pg_ctl stop -D <its data dir>`), so long runs split into calls without seeding again. --only: one
 * side (B alone needs no --base). --base-database with --base-ids: A runs on that seeded database at that many ids
 * instead (B's sizes against A at 100,000 ids, alternating in one session).
 *
 * A: --base's bundled CLI as built there (packages/node-server/dist/pemba.mjs; it is run, never rebuilt), with
 * --base-args. B: this checkout's CLI with --replica-memory --memory; a list (--memory 1,32,256) runs one B per
 * value in turn (with --only B: the RSS at each budget under the same load, --replica-memory 1 giving the baseline
 * of a server with almost no working set). Both bind 127.0.0.1 only.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "@pemba/core/testing/node";
import { connectPg, startDatabase } from "./lib/database.ts";
import { fastSeed } from "./lib/fast-seed.ts";
import { metric, runK6 } from "./lib/k6.ts";
import { cpuSeconds, peakRssMegabytes, rssMegabytes } from "./lib/proc.ts";
import { check, seed, TENANT_ID, writeSeedSchema } from "./lib/seed.ts";
import { buildPemba, REPO_DIR, startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "100000" },
    rate: { type: "string", default: "2000" },
    duration: { type: "string", default: "60s" },
    warmup: { type: "string", default: "0s" },
    hot: { type: "string" },
    rounds: { type: "string", default: "2" },
    zipf: { type: "string", default: "1.0" },
    memory: { type: "string", default: "256" },
    base: { type: "string" },
    store: { type: "string", default: "sqlite" },
    seed: { type: "string", default: "fast" },
    only: { type: "string" },
    database: { type: "string" },
    keep: { type: "boolean", default: false },
    "base-database": { type: "string" },
    "base-ids": { type: "string" },
    "base-args": { type: "string", default: "--replica-max-rows 20000000" },
  },
});
if (values.base === undefined && values.only !== "B") {
  console.error("--base <checkout>: the checkout whose built CLI is A (e.g. a worktree of main)");
  process.exit(2);
}
const ids = Number(values.ids);
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

interface Server {
  pid: number;
  exited(): boolean;
  url: string;
  stop(): Promise<void>;
}

/** A server from a bundled CLI as found (no build step), waiting for nothing: the caller measures readiness. */
async function spawnCli(repo: string, database: string, args: string[]): Promise<Server> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      resolve(repo, "packages/node-server/dist/pemba.mjs"),
      "serve",
      "--database",
      database,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--log-level",
      "warn",
      ...args,
    ],
    // no gRPC port (a variable: a checkout from before the gRPC port ignores it), so two runs never clash on one
    { cwd: repo, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, PEMBA_GRPC_PORT: "0" } },
  );
  let exited = false;
  child.once("exit", () => {
    exited = true;
  });
  return {
    pid: child.pid!,
    exited: () => exited,
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((done) => {
        if (exited) return done();
        child.once("exit", () => done());
        child.kill("SIGTERM");
      }),
  };
}

/** ms from `started` until a check answers 200 (polled every 5 ms). */
async function firstAnswer(server: Server, schemaVersion: string, started: number): Promise<number> {
  for (;;) {
    try {
      await check(server.url, schemaVersion, "content:1", "user:2");
      return performance.now() - started;
    } catch (error) {
      if (server.exited()) throw new Error(`the server exited before answering: ${error}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

const dir = mkdtempSync(join(tmpdir(), "pemba-working-set-"));
log(
  `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
const postgres = values.store === "postgres";
if (values.only !== "A") buildPemba(); // B runs this checkout's bundled CLI (rebuilt when a source is newer)
let database = values.database;
let stopDatabase = async () => {};
try {
  let schemaVersion: string;
  if (database !== undefined) {
    schemaVersion = await headVersion(database);
    log(`database ${database.replace(/:[^:@/]*@/, ":***@")}: schema ${schemaVersion}`);
  } else {
    const db = await startDatabase(postgres, dir);
    database = db.url;
    if (!values.keep) stopDatabase = db.stop;
    log(`seeding ${ids} ids (${8 * ids} rows, --seed ${values.seed}) into ${db.label} ...`);
    if (values.seed === "http") {
      const seeder = await startPemba(database, ["--log-level", "warn", "--replica", "off"]);
      schemaVersion = await writeSeedSchema(seeder.url);
      const seeded = await seed(seeder.url, schemaVersion, () => {}, { totalIds: ids });
      log(`seeded in ${seeded.seconds.toFixed(1)} s`);
      await seeder.stop();
    } else {
      const seeded = await fastSeed(database, ids, log);
      schemaVersion = seeded.schemaVersion;
      log(`seeded in ${seeded.seconds.toFixed(1)} s`);
    }
    if (values.keep) log(`kept: --database ${database}`);
  }
  const baseDatabase = values["base-database"] ?? database;
  const baseIds = values["base-database"] === undefined ? ids : Number(values["base-ids"]);
  if (!(baseIds > 0)) throw new Error("--base-database needs --base-ids");
  const baseVersion = baseDatabase === database ? schemaVersion : await headVersion(baseDatabase);
  const seeded = database;

  const targets = [
    {
      side: "A",
      name: `A whole-tenant (${values.base}, ${values["base-args"]}, ${baseIds} ids)`,
      repo: values.base!,
      args: values["base-args"]!.split(" ").filter(Boolean),
      database: baseDatabase,
      schemaVersion: baseVersion,
      ids: baseIds,
    },
    ...values.memory!.split(",").map((memory) => ({
      side: "B",
      name: `B working set (--replica-memory ${memory}, ${ids} ids)`,
      repo: REPO_DIR,
      args: ["--replica-memory", memory],
      database: seeded,
      schemaVersion,
      ids,
    })),
  ].filter((t) => values.only === undefined || t.side === values.only);
  const rows: string[] = [];
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const target of round % 2 === 1 ? targets : [...targets].reverse()) {
      const started = performance.now();
      const server = await spawnCli(target.repo, target.database, target.args);
      const ready = await firstAnswer(server, target.schemaVersion, started);
      const load = (duration: string) =>
        runK6("check-open-model.js", {
          PEMBA_URL: server.url,
          TENANT_ID,
          SCHEMA_VERSION: target.schemaVersion,
          RATE: values.rate!,
          DURATION: duration,
          TOTAL_IDS: values.hot ?? target.ids,
          ZIPF_S: values.zipf!,
        });
      if (values.warmup !== "0s") await load(values.warmup!);
      const before = await metricsText(server.url); // also starts the event-loop delay's window afresh
      const cpu0 = cpuSeconds(server.pid);
      const run = await load(values.duration!);
      const cpu = cpuSeconds(server.pid) - cpu0;
      const held = workingSet(before, await metricsText(server.url));
      const answered = metric(run.summary, "http_reqs", "count");
      const line =
        `round ${round} ${target.name}: first answer ${ready.toFixed(0)} ms, ` +
        `${answered} checks (${metric(run.summary, "dropped_iterations", "count")} dropped, ${metric(run.summary, "checks", "fails")} failed), ` +
        `CPU ${((1e6 * cpu) / Math.max(1, answered)).toFixed(0)} µs/check, ` +
        `p50 ${metric(run.summary, "http_req_duration", "med").toFixed(2)} ms, p99 ${metric(run.summary, "http_req_duration", "p(99)").toFixed(2)} ms, ` +
        `RSS ${rssMegabytes(server.pid).toFixed(0)} MB (peak ${peakRssMegabytes(server.pid).toFixed(0)} MB)${held}, load average ${loadavg()[0]!.toFixed(1)}`;
      log(line);
      rows.push(line);
      await server.stop();
    }
  }
  console.log(`\n${rows.join("\n")}`);
} finally {
  await stopDatabase();
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}

async function metricsText(url: string): Promise<string> {
  return await (await fetch(`${url}/metrics`)).text();
}

/**
 * The working set as the server's /metrics reports it after a run (B; A's whole-tenant build has no such gauges):
 * estimated bytes held of the budget and entries evicted since the start; and, over the measured run (from the
 * scrape `before` it to `text`), the longest event-loop delay (prom-client resets its window at each scrape) and the
 * time in GC.
 */
function workingSet(before: string, text: string): string {
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  const bytes = gauge("pemba_working_set_bytes");
  // the longest event-loop delay since the start and the time in GC pauses (prom-client's default metrics)
  const loop = `event loop delay max ${(1000 * gauge("pemba_nodejs_eventloop_lag_max_seconds")).toFixed(0)} ms`;
  const gcSum = (t: string) =>
    [...t.matchAll(/^pemba_nodejs_gc_duration_seconds_sum\{[^}]*\} (\S+)$/gm)].reduce(
      (a, m) => a + Number(m[1]),
      0,
    );
  const pauses = `GC ${(gcSum(text) - gcSum(before)).toFixed(2)} s`;
  const mb = (b: number) => (b / 1048576).toFixed(1);
  // V8's heap at the end of the run: used (live objects and garbage not yet collected) and its old space
  const oldSpace = Number(
    /^pemba_nodejs_heap_space_size_used_bytes\{space="old"\} (\S+)$/m.exec(text)?.[1] ?? Number.NaN,
  );
  const heap = `heap used ${mb(gauge("pemba_nodejs_heap_size_used_bytes"))} MB (old space ${mb(oldSpace)} MB)`;
  if (Number.isNaN(bytes)) return `, ${heap}, ${loop}, ${pauses}`;
  return `, working set ${mb(bytes)} of ${mb(gauge("pemba_working_set_max_bytes"))} MB (${gauge("pemba_working_set_evictions")} evicted), ${heap}, ${loop}, ${pauses}`;
}

/** The tenant's newest schema version in a seeded database. */
async function headVersion(url: string): Promise<string> {
  const statement = `SELECT version FROM schemas WHERE tenant_id = '${TENANT_ID}' ORDER BY seq DESC LIMIT 1`;
  if (/^postgres(ql)?:\/\//.test(url)) {
    const db = await connectPg(url);
    try {
      return String((await db.query(statement)).rows[0]!.version);
    } finally {
      await db.end();
    }
  }
  const Database = createRequire(import.meta.resolve("@pemba/core/node"))("better-sqlite3") as new (
    p: string,
    o: { readonly: boolean },
  ) => { prepare(s: string): { get(): { version: string } }; close(): void };
  const db = new Database(url, { readonly: true });
  try {
    return db.prepare(statement).get().version;
  } finally {
    db.close();
  }
}
