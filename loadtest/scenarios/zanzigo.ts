/**
 * zanzigo: its benchmark's data (3 tuples x 10,000 ids: user -> group -> folder -> doc) and load (100, then 1000
 * looping VUs for 1 minute, a random doc#viewer check and sleep(1) each), in zanzigo's result-table format. SQLite
 * vs PostgreSQL: run it with --target node-sqlite and --target node-postgres. --duration sets each run's length.
 */
import { randomBytes } from "node:crypto";
import { metric } from "../lib/k6.ts";
import { rssMegabytes } from "../lib/proc.ts";
import { checksOf, checksText, table, trendText } from "../lib/report.ts";
import { type Scenario, type ScenarioContext, seconds } from "../lib/scenario.ts";
import type { TargetName } from "../lib/targets.ts";

/** zanzigo's published HTTP rows (n2-standard-4 server and load generator, same region, other zone). */
const PUBLISHED: [string, string][] = [
  ["pgquery-http-100", "avg=3.91ms min=1.06ms med=2.9ms max=65.78ms p(90)=4.55ms p(95)=5.95ms"],
  ["pgquery-http-1000", "avg=9.2ms min=728.67µs med=2.77ms max=269.05ms p(90)=5.6ms p(95)=13.19ms"],
  ["pgfunc-http-100", "avg=2.68ms min=748.27µs med=2.25ms max=36.09ms p(90)=3.45ms p(95)=4.04ms"],
  ["pgfunc-http-1000", "avg=4.58ms min=645.74µs med=1.92ms max=197.74ms p(90)=5.26ms p(95)=9.09ms"],
  ["sqlite-http-100", "avg=2.03ms min=372.72µs med=1.68ms max=40.79ms p(90)=3.31ms p(95)=3.91ms"],
  ["sqlite-http-1000", "avg=4.63ms min=360.8µs med=1.68ms max=126.67ms p(90)=4.32ms p(95)=10.92ms"],
];

const PREFIX: Record<TargetName, string> = {
  "node-sqlite": "sqlite",
  "node-postgres": "pg",
  "node-postgres-replicas": "pg-replicas",
  "node-libsql-replicated": "libsql-replicated",
  worker: "worker",
};

async function run(ctx: ScenarioContext) {
  const token = randomBytes(16).toString("hex");
  const ids = ctx.smoke ? 1000 : 10_000;
  const vusList = ctx.smoke ? [10, 100] : [100, 1000];
  const duration = seconds(ctx, 60, 5);
  const failures: string[] = [];
  const target = await ctx.start({ auth: { kind: "key", key: token } });
  const rows: string[][] = [];
  const details: string[][] = [];
  /** The database's side of each run (targets on PostgreSQL or libSQL): the primary's CPU, the replication lag. */
  const database: string[][] = [];
  for (const vus of vusList) {
    const name = `${PREFIX[ctx.target]}-http-${vus}`;
    ctx.log(
      `${name}: ${vus} looping VUs for ${duration} s (setup seeds ${3 * ids} tuples if not there yet) ...`,
    );
    const cpuBefore = target.database?.primaryCpuSeconds();
    const stopProbe = target.database?.probeLag();
    const result = await ctx.k6(
      "zanzigo-check.js",
      { PEMBA_URL: target.url, PEMBA_TOKEN: token, IDS: ids, VUS: vus, DURATION: `${duration}s` },
      `${vus} VUs`,
    );
    const s = result.summary;
    if (target.database !== undefined) {
      const lag = await stopProbe!();
      const cpu = target.database.primaryCpuSeconds() - cpuBefore!;
      // one check per iteration
      const checksDone = metric(s, "iterations", "count");
      database.push([
        name,
        `${cpu.toFixed(2)} s`,
        checksDone > 0 ? `${((cpu * 1000) / checksDone).toFixed(3)} s` : "-",
        lag.samples === 0
          ? "no replica"
          : `p50 ${lag.p50.toFixed(1)} ms, p95 ${lag.p95.toFixed(1)} ms, max ${lag.max.toFixed(1)} ms (${lag.samples} probes)`,
      ]);
    }
    const seeded = /Seeded (\d+) tuples in ([\d.]+) s/.exec(result.output);
    if (seeded) ctx.log(`  seeded ${seeded[1]} tuples in ${seeded[2]} s`);
    const checks = checksOf(s);
    if (checks.percent !== 100) failures.push(`${name}: checks ${checksText(s)}`);
    if (result.exitCode !== 0) failures.push(`${name}: k6 exited with ${result.exitCode}`);
    const checkDuration = trendText(s, "http_req_duration{name:check}");
    rows.push([`\`${name}\``, `\`${checkDuration.replace(/ p\(99\)=.*$/, "")}\``]);
    details.push([
      name,
      checksText(s),
      `${metric(s, "iterations", "count")} (${metric(s, "iterations", "rate").toFixed(1)}/s)`,
      checkDuration,
      `${rssMegabytes(target.serverPid).toFixed(0)} MB`,
    ]);
  }
  const sections = [
    `## Results (zanzigo's table format)\n\n${ids} ids (${3 * ids} tuples), looping VUs with sleep(1), ${duration} s per run; load generated on the same machine.\n\n${table(["Scenario", "Request Duration"], rows)}`,
    `## Details\n\n${table(["scenario", "checks (status 200, allowed)", "check requests", "http_req_duration of the checks", "server RSS after"], details)}`,
    `## zanzigo's published rows (for comparison)\n\nzanzigo on an n2-standard-4 (4 vCPU), load from another VM in the same region, other zone (so each request crosses a network).\n\n${table(
      ["Scenario", "Request Duration"],
      PUBLISHED.map(([n, d]) => [`\`${n}\``, `\`${d}\``]),
    )}`,
  ];
  if (database.length > 0) {
    sections.push(
      `## Database (the primary's CPU and the replication lag)\n\n${target.description}. The primary's CPU: user + system seconds of every process of the primary database server (from /proc) during the run, the seeding included; per 1000 checks. The lag: a row written at the primary every 200 ms during the run, timed until every replica shows it.\n\n${table(["scenario", "primary CPU", "primary CPU per 1000 checks", "replication lag"], database)}`,
    );
  }
  return { sections, failures };
}

export const zanzigo: Scenario = {
  title:
    "zanzigo's benchmark: 3 tuples x 10,000 ids (group member -> folder viewer -> doc parent), random doc#viewer checks by 100 and 1000 looping VUs.",
  run,
};
