/**
 * permify: Permify's v1.6.9 load test as published (seed writer: 100,000 ids = 600,000 tuples + 200,000
 * attributes; k6test.js: ramping arrival rate 10 -> 10,000/s over 100 s with `sleep(1)` and at most 100 VUs), then
 * the open-model variant: constant arrival rate, no sleep, stepped up by x1.25 from --rate (default 500/s) for
 * --duration per step (default 15 s) until a step misses p99 <= 10 ms with < 1% dropped iterations (a missed step
 * runs once more). dropped_iterations is reported for every run. With `--protocol grpc` the open model's checks
 * go to the gRPC port as base.v1.Permission/Check (k6/check-open-model-grpc.js); the seed and the published
 * script stay HTTP, as Permify's are.
 */
import { randomBytes } from "node:crypto";
import { type K6Run, metric } from "../lib/k6.ts";
import { rssMegabytes } from "../lib/proc.ts";
import { checksOf, checksText, counterText, formatMs, table, trendText } from "../lib/report.ts";
import type { Scenario, ScenarioContext } from "../lib/scenario.ts";
import { seed, spotCheck, TENANT_ID, writeSeedSchema } from "../lib/seed.ts";

const P99_LIMIT_MS = 10;
const DROP_LIMIT = 0.01;
const STEP_FACTOR = 1.25;
const MAX_STEPS = 40;

/** Permify's published read-test figures (v1.6.9 document), for the report's comparison column. */
const PUBLISHED: Record<string, string> = {
  checks: "100.00% (74614 out of 74614)",
  dropped_iterations: "272433 (2696.48/s)",
  http_req_duration: "avg=21.3ms min=428µs med=15.38ms max=617.85ms p(90)=45.7ms p(95)=58.99ms",
  http_req_failed: "0.00% (0 out of 74614)",
  http_reqs: "74614 (738.51/s)",
  iteration_duration: "avg=1.02s min=1s med=1.01s max=1.61s p(90)=1.04s p(95)=1.05s",
  vus_max: "1000",
};

interface Step {
  rate: number;
  answered: number;
  dropped: number;
  failedChecks: number;
  p50: number;
  p99: number;
  held: boolean;
}

function stepOf(rate: number, run: K6Run, protocol: "http" | "grpc"): Step {
  const s = run.summary;
  // one request per iteration; k6 counts no grpc_reqs
  const answered = metric(s, protocol === "http" ? "http_reqs" : "iterations", "count");
  const duration = protocol === "http" ? "http_req_duration" : "grpc_req_duration";
  const dropped = metric(s, "dropped_iterations", "count");
  const failedChecks = metric(s, "checks", "fails");
  const p99 = metric(s, duration, "p(99)");
  const droppedShare = dropped / Math.max(1, answered + dropped);
  return {
    rate,
    answered,
    dropped,
    failedChecks,
    p50: metric(s, duration, "med"),
    p99,
    held: p99 <= P99_LIMIT_MS && droppedShare < DROP_LIMIT && failedChecks === 0 && answered > 0,
  };
}

async function run(ctx: ScenarioContext) {
  const token = randomBytes(16).toString("hex");
  const totalIds = ctx.smoke ? 1000 : 100_000;
  const failures: string[] = [];
  const target = await ctx.start({ auth: { kind: "key", key: token } });
  const schemaVersion = await writeSeedSchema(target.url, token);
  ctx.log(`schema written (loadtest/k6/permify.perm): version ${schemaVersion}`);
  const base = {
    PEMBA_URL: target.url,
    PEMBA_GRPC: target.grpcAddress ?? "",
    TENANT_ID,
    SCHEMA_VERSION: schemaVersion,
    PEMBA_TOKEN: token,
  };
  // --protocol grpc: the open model's checks go to the gRPC port (base.v1.Permission/Check), same request mix
  const openModelScript = ctx.protocol === "grpc" ? "check-open-model-grpc.js" : "check-open-model.js";

  ctx.log(`seeding with permify-seed-writer.js (${totalIds} ids) ...`);
  const seeded = await seed(target.url, schemaVersion, ctx.log, {
    token,
    totalIds,
    k6: (script, env) => ctx.k6(script, env, "seed writer"),
  });
  const rows = seeded.tuples + seeded.attributes;
  const rssAfterSeed = rssMegabytes(target.serverPid);
  ctx.log(`seeded ${rows} rows in ${seeded.seconds.toFixed(1)} s; server RSS ${rssAfterSeed.toFixed(0)} MB`);
  ctx.log(
    `spot checks: ${await spotCheck(target.url, schemaVersion, token, totalIds)} decisions as expected`,
  );

  ctx.log("permify-check.js as published (ramping arrival rate, sleep(1), maxVUs 100) ...");
  const published = await ctx.k6(
    "permify-check.js",
    { ...base, TOTAL_IDS: totalIds, TIME_SCALE: ctx.smoke ? 0.1 : 1 },
    "published check script",
  );
  const checks = checksOf(published.summary);
  if (checks.percent !== 100) failures.push(`permify-check.js: checks ${checksText(published.summary)}`);
  if (published.exitCode !== 0) failures.push(`permify-check.js: k6 exited with ${published.exitCode}`);

  const stepSeconds = ctx.durationSeconds ?? (ctx.smoke ? 3 : 15);
  let rate = ctx.rate ?? (ctx.smoke ? 50 : 500);
  const maxSteps = ctx.smoke ? 2 : MAX_STEPS;
  ctx.log(
    `open model (${ctx.protocol}): constant arrival rate from ${rate}/s, x${STEP_FACTOR} per ${stepSeconds} s step ...`,
  );
  const steps: Step[] = [];
  for (let i = 0; i < maxSteps; i++) {
    let step: Step | undefined;
    for (let attempt = 1; attempt <= 2 && !step?.held; attempt++) {
      const env = { ...base, TOTAL_IDS: totalIds, RATE: rate, DURATION: `${stepSeconds}s` };
      step = stepOf(rate, await ctx.k6(openModelScript, env, "open model steps"), ctx.protocol);
      steps.push(step);
      ctx.log(
        `  ${rate}/s: answered ${step.answered}, dropped ${step.dropped}, p99 ${formatMs(step.p99)} -> ${step.held ? "held" : attempt === 1 ? "missed, once more" : "not held"}`,
      );
      if (step.failedChecks > 0) failures.push(`open model at ${rate}/s: ${step.failedChecks} failed checks`);
    }
    if (!step!.held) break;
    rate = Math.round(rate * STEP_FACTOR);
  }
  const best = Math.max(0, ...steps.filter((s) => s.held).map((s) => s.rate));
  const rssAfter = rssMegabytes(target.serverPid);

  const metricRows = [
    ["checks", checksText(published.summary), PUBLISHED.checks],
    [
      "dropped_iterations",
      counterText(published.summary, "dropped_iterations"),
      PUBLISHED.dropped_iterations,
    ],
    ["http_req_duration", trendText(published.summary), PUBLISHED.http_req_duration],
    [
      "http_req_failed",
      `${(100 * metric(published.summary, "http_req_failed", "value")).toFixed(2)}%`,
      PUBLISHED.http_req_failed,
    ],
    ["http_reqs", counterText(published.summary, "http_reqs"), PUBLISHED.http_reqs],
    ["iteration_duration", trendText(published.summary, "iteration_duration"), PUBLISHED.iteration_duration],
    ["vus_max", String(metric(published.summary, "vus_max", "max")), PUBLISHED.vus_max],
  ];
  const sections = [
    `## Seeding (Permify's writer)\n\n${table(
      ["ids", "tuples", "attributes", "seconds", "rows/s", "server RSS after"],
      [
        [
          totalIds,
          seeded.tuples,
          seeded.attributes,
          seeded.seconds.toFixed(1),
          Math.round(rows / seeded.seconds),
          `${rssAfterSeed.toFixed(0)} MB`,
        ],
      ],
    )}`,
    `## Read test results (permify-check.js as published)\n\nPermify's figures: v1.6.9 on GKE with Cloud SQL PostgreSQL 15 (their document). Ours: the target above, k6 on the same machine.${ctx.smoke ? " Smoke: stages at a tenth of their length." : ""}\n\n${table(["Metric", "Pemba", "Permify v1.6.9 (published)"], metricRows)}`,
    `## Open model (constant arrival rate, no sleep)\n\nHighest rate held (p99 <= ${P99_LIMIT_MS} ms, < ${100 * DROP_LIMIT}% dropped iterations, no failed check): **${best}/s**. Steps of ${stepSeconds} s, x${STEP_FACTOR}; a missed step is run once more. Server RSS at the end: ${rssAfter.toFixed(0)} MB.\n\n${table(
      ["rate/s", "answered", "dropped_iterations", "dropped %", "failed checks", "p50", "p99", "held"],
      steps.map((s) => [
        s.rate,
        s.answered,
        s.dropped,
        ((100 * s.dropped) / Math.max(1, s.answered + s.dropped)).toFixed(2),
        s.failedChecks,
        formatMs(s.p50),
        formatMs(s.p99),
        s.held ? "yes" : "no",
      ]),
    )}`,
  ];
  return { sections, failures };
}

export const permify: Scenario = {
  title:
    "Permify's load test (v1.6.9 document): its seed writer and check script as published, then an open-model variant stepping the arrival rate up.",
  run,
};
