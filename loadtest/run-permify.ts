/**
 * Runs Permify's own v1.6.9 load test against `pemba serve`: write the seed schema, seed with Permify's writer
 * (100,000 ids = 600,000 tuples + 200,000 attributes), spot-check decisions, then run Permify's check script.
 *
 *   node --experimental-strip-types loadtest/run-permify.ts [--postgres] [--skip-check]
 *
 * The server runs on a temp SQLite file (or, with --postgres, a throwaway PostgreSQL) on 127.0.0.1 only.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startDatabase } from "./lib/database.ts";
import { metric, runK6 } from "./lib/k6.ts";
import { rssMegabytes } from "./lib/proc.ts";
import { seed, spotCheck, TENANT_ID, writeSeedSchema } from "./lib/seed.ts";
import { startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: { postgres: { type: "boolean" }, "skip-check": { type: "boolean" } },
});
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

const dir = mkdtempSync(join(tmpdir(), "pemba-permify-"));
const database = await startDatabase(values.postgres === true, dir);
log(`database: ${database.label}`);
const server = await startPemba(database.url, ["--log-level", "warn"]);
try {
  log(`pemba serve at ${server.url} (pid ${server.pid})`);
  const schemaVersion = await writeSeedSchema(server.url);
  log(`schema written: version ${schemaVersion}`);

  log("seeding with permify-seed-writer.js (600,000 tuples + 200,000 attributes, batches of 1,000) ...");
  const seeded = await seed(server.url, schemaVersion, (line) => log(`  k6: ${line}`));
  const perSecond = Math.round((seeded.tuples + seeded.attributes) / seeded.seconds);
  log(`seeded in ${seeded.seconds.toFixed(1)} s (${perSecond} rows/s), no failed batch`);
  log(`server RSS after seeding: ${rssMegabytes(server.pid).toFixed(0)} MB`);
  log(`spot checks: ${await spotCheck(server.url, schemaVersion)} decisions as expected`);

  if (!values["skip-check"]) {
    log(
      "running permify-check.js (ramping-arrival-rate 10 -> 10,000/s over 100 s, sleep(1), maxVUs 100) ...",
    );
    const run = await runK6("permify-check.js", {
      PEMBA_URL: server.url,
      TENANT_ID,
      SCHEMA_VERSION: schemaVersion,
    });
    const passes = metric(run.summary, "checks", "passes");
    const fails = metric(run.summary, "checks", "fails");
    const pct = passes + fails === 0 ? 0 : (100 * passes) / (passes + fails);
    log(`checks passed: ${pct.toFixed(2)}% (${passes} of ${passes + fails})`);
    log(
      `http_reqs: ${metric(run.summary, "http_reqs", "count")} (${metric(run.summary, "http_reqs", "rate").toFixed(1)}/s), ` +
        `dropped_iterations: ${metric(run.summary, "dropped_iterations", "count")}`,
    );
    const d = (s: string) => metric(run.summary, "http_req_duration", s).toFixed(2);
    log(
      `http_req_duration ms: avg=${d("avg")} med=${d("med")} p(90)=${d("p(90)")} p(95)=${d("p(95)")} p(99)=${d("p(99)")} max=${d("max")}`,
    );
    log(`server RSS after checks: ${rssMegabytes(server.pid).toFixed(0)} MB`);
    if (run.exitCode !== 0) log(`k6 exited with ${run.exitCode}`);
    process.exitCode = pct === 100 ? 0 : 1;
  }
} finally {
  const code = await server.stop();
  log(`pemba serve stopped (exit ${code})`);
  await database.stop();
  rmSync(dir, { recursive: true, force: true });
}
