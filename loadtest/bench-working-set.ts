/**
 * The working-set replica against the whole-tenant replica, A/B in alternating rounds: Permify's dataset (the seed
 * writer at --ids ids: 8 rows per id) on one SQLite file, then per round each server on that file in turn:
 * startup to the first answered check, a Zipf (s = --zipf) open-model check load (k6 check-open-model.js) at --rate
 * for --duration (after --warmup of the same load, not measured), the server's CPU per answered check, p50/p99,
 * RSS after. --hot <n>: the checks draw from the first n ids only (every key warm after the warm-up: the cost of
 * hot keys).
 *
 *   node --experimental-strip-types loadtest/bench-working-set.ts [--ids 100000] [--rate 2000] [--duration 60s]
 *     [--warmup 0s] [--rounds 2] [--zipf 1.0] [--memory 256] --base <checkout of main> [--base-args "--replica-max-rows 20000000"]
 *
 * A: --base's bundled CLI as built there (packages/node-server/dist/pemba.mjs; it is run, never rebuilt), with
 * --base-args. B: this checkout's CLI with --replica-memory --memory. Both bind 127.0.0.1 only.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { metric, runK6 } from "./lib/k6.ts";
import { cpuSeconds, rssMegabytes } from "./lib/proc.ts";
import { check, seed, TENANT_ID, writeSeedSchema } from "./lib/seed.ts";
import { freePort, REPO_DIR, startPemba } from "./lib/servers.ts";

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
    "base-args": { type: "string", default: "--replica-max-rows 20000000" },
  },
});
if (values.base === undefined) {
  console.error("--base <checkout>: the checkout whose built CLI is A (e.g. a worktree of main)");
  process.exit(2);
}
const ids = Number(values.ids);
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

interface Server {
  pid: number;
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
    { cwd: repo, stdio: ["ignore", "ignore", "inherit"] },
  );
  return {
    pid: child.pid!,
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((done) => {
        child.once("exit", () => done());
        child.kill("SIGTERM");
      }),
  };
}

/** ms from `started` until a check answers 200 (polled every 5 ms). */
async function firstAnswer(url: string, schemaVersion: string, started: number): Promise<number> {
  for (;;) {
    try {
      await check(url, schemaVersion, "content:1", "user:2");
      return performance.now() - started;
    } catch {
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
const file = join(dir, "permify.db");
try {
  const seeder = await startPemba(file, ["--log-level", "warn", "--replica", "off"]);
  const schemaVersion = await writeSeedSchema(seeder.url);
  log(`seeding ${ids} ids (${8 * ids} rows) ...`);
  const seeded = await seed(seeder.url, schemaVersion, () => {}, { totalIds: ids });
  log(`seeded in ${seeded.seconds.toFixed(1)} s`);
  await seeder.stop();

  const targets = [
    {
      name: `A whole-tenant (${values.base}, ${values["base-args"]})`,
      repo: values.base!,
      args: values["base-args"]!.split(" ").filter(Boolean),
    },
    {
      name: `B working set (--replica-memory ${values.memory})`,
      repo: REPO_DIR,
      args: ["--replica-memory", values.memory!],
    },
  ];
  const rows: string[] = [];
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const target of round % 2 === 1 ? targets : [...targets].reverse()) {
      const started = performance.now();
      const server = await spawnCli(target.repo, file, target.args);
      const ready = await firstAnswer(server.url, schemaVersion, started);
      const load = (duration: string) =>
        runK6("check-open-model.js", {
          PEMBA_URL: server.url,
          TENANT_ID,
          SCHEMA_VERSION: schemaVersion,
          RATE: values.rate!,
          DURATION: duration,
          TOTAL_IDS: values.hot ?? ids,
          ZIPF_S: values.zipf!,
        });
      if (values.warmup !== "0s") await load(values.warmup!);
      const cpu0 = cpuSeconds(server.pid);
      const run = await load(values.duration!);
      const cpu = cpuSeconds(server.pid) - cpu0;
      const answered = metric(run.summary, "http_reqs", "count");
      const line =
        `round ${round} ${target.name}: first answer ${ready.toFixed(0)} ms, ` +
        `${answered} checks (${metric(run.summary, "dropped_iterations", "count")} dropped, ${metric(run.summary, "checks", "fails")} failed), ` +
        `CPU ${((1e6 * cpu) / Math.max(1, answered)).toFixed(0)} µs/check, ` +
        `p50 ${metric(run.summary, "http_req_duration", "med").toFixed(2)} ms, p99 ${metric(run.summary, "http_req_duration", "p(99)").toFixed(2)} ms, ` +
        `RSS ${rssMegabytes(server.pid).toFixed(0)} MB`;
      log(line);
      rows.push(line);
      await server.stop();
    }
  }
  console.log(`\n${rows.join("\n")}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
