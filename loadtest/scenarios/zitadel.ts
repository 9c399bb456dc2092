/**
 * zitadel: ZITADEL's machine-JWT soak (600 VUs, 30 minutes) for Pemba: a local issuer (ES256 key, JWKS on
 * 127.0.0.1), one access token per VU (a machine client), Pemba in JWKS mode, and k6/zitadel-soak.js's mixed
 * read/write load. The report follows ZITADEL's table, including the top 3 most expensive SQL statements from the
 * server's per-statement metrics (pemba_sql_query_duration_seconds on /metrics).
 * Length: --duration, else PEMBA_SOAK_DURATION (e.g. 5m), else 30m; VUs: PEMBA_SOAK_VUS, else 600.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startIssuer } from "../lib/issuer.ts";
import { metric } from "../lib/k6.ts";
import { rssMegabytes, rssSlopePer10Minutes, rssTextChart, sampleRss } from "../lib/proc.ts";
import { checksOf, checksText, formatMs, gitCommit, k6Version, table } from "../lib/report.ts";
import { parseDuration, type Scenario, type ScenarioContext } from "../lib/scenario.ts";
import { TENANT_ID } from "../lib/seed.ts";
import { statementCosts } from "../lib/sql-metrics.ts";

const KINDS = ["check", "write", "delete", "read", "lookup-entity"];

async function run(ctx: ScenarioContext) {
  const vus = Number(process.env.PEMBA_SOAK_VUS ?? (ctx.smoke ? 20 : 600));
  const soakEnv = process.env.PEMBA_SOAK_DURATION;
  const duration = ctx.durationSeconds ?? (soakEnv ? parseDuration(soakEnv) : ctx.smoke ? 12 : 1800);
  const data = ctx.smoke ? { DOCS: 500, ORGS: 10, USERS: 500 } : { DOCS: 10_000, ORGS: 100, USERS: 5000 };
  const failures: string[] = [];

  const issuer = await startIssuer();
  ctx.defer(() => issuer.stop());
  ctx.log(`issuer ${issuer.issuer} (ES256), JWKS at ${issuer.jwksUrl}`);
  const tokens = await Promise.all(
    Array.from({ length: vus }, (_, i) => issuer.token(`machine-client-${i + 1}`, duration + 900)),
  );
  const tokensFile = join(ctx.workDir, "tokens.json");
  writeFileSync(tokensFile, JSON.stringify(tokens));
  const target = await ctx.start({
    auth: { kind: "jwks", jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: issuer.audience },
  });

  // JWKS mode is on: a token signed by another key is refused
  const other = await startIssuer();
  const stranger = await other.token("intruder", 60);
  await other.stop();
  const refused = await fetch(`${target.url}/v1/tenants/${TENANT_ID}/schemas/list`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${stranger}` },
    body: "{}",
  });
  await refused.arrayBuffer();
  if (refused.status !== 401) failures.push(`a token of another key answered ${refused.status}, not 401`);
  ctx.log(`token of an unknown key: HTTP ${refused.status}`);

  const startedAt = new Date();
  ctx.log(`soak: ${vus} machine clients (VUs) for ${duration} s, mixed read/write ...`);
  const rss = sampleRss(target.serverPid, 1000);
  const result = await ctx.k6(
    "zitadel-soak.js",
    { PEMBA_URL: target.url, TOKENS_FILE: tokensFile, VUS: vus, DURATION: `${duration}s`, ...data },
    "soak",
  );
  const maxRss = rss.stop();
  const readings = rss.samples();
  // the last 20 minutes of a 30-minute soak (warm-up left out); a shorter run: its last two thirds
  const slopeFrom = duration >= 1800 ? duration - 1200 : Math.round(duration / 3);
  const slope = rssSlopePer10Minutes(readings, slopeFrom);
  const s = result.summary;
  const checks = checksOf(s);
  if (checks.percent < 100) failures.push(`checks ${checksText(s)}`);
  if (result.exitCode !== 0) failures.push(`k6 exited with ${result.exitCode}`);

  const metricsText = await target.metrics(tokens[0]!);
  const costs = metricsText === undefined ? undefined : statementCosts(metricsText);
  const top3 =
    costs === undefined
      ? "not available: the Worker has no /metrics"
      : costs
          .slice(0, 3)
          .map(
            (c, i) =>
              `${i + 1}: ${c.kind} (${c.seconds.toFixed(2)} s in ${c.count} statements, ${formatMs((1000 * c.seconds) / Math.max(1, c.count))} each)`,
          )
          .join(" ");
  if (costs !== undefined && costs.length === 0) failures.push("no SQL statement metrics on /metrics");
  const failed = metric(s, "http_req_failed", "passes");
  const d = (p: string) => formatMs(metric(s, "http_req_duration", p));
  const rows = [
    ["Baseline", "none", "none"],
    ["Purpose", "Test current performance", "Test current performance"],
    ["Test start", `${startedAt.toISOString().slice(11, 16)} UTC`, "09:48 UTC"],
    ["Test duration", `${(duration / 60).toFixed(duration < 60 ? 1 : 0)}min`, "30min"],
    ["Executed test", "zitadel-soak.js (mixed read/write, JWT machine clients)", "machine_jwt_profile_grant"],
    ["k6 version", k6Version(), "v0.57.0"],
    ["VUs", vus, 600],
    ["Client location", "same machine (127.0.0.1)", "US1"],
    [
      "Pemba / ZITADEL",
      `${target.description}; RSS max ${maxRss.toFixed(0)} MB`,
      "6 vCPU, 6 Gi, 2-7 containers",
    ],
    ["Version", `pemba ${gitCommit()}`, "v2.70.0"],
    [
      "Database",
      target.name === "node-postgres"
        ? "PostgreSQL 15 (local)"
        : target.name === "worker"
          ? "the Worker's store"
          : "SQLite file",
      "psql v17.2, 8 vCPU 32 GiB",
    ],
    ["Observed errors", `${failed} failed requests of ${metric(s, "http_reqs", "count")}`, "5 of 3291974"],
    ["Top 3 most expensive database queries", top3, "1: eventstore.push 2: Query user 3: Query events"],
    ["k6 Iterations per second", metric(s, "iterations", "rate").toFixed(0), "1806"],
    ["checks", checksText(s), "99.99% (6580931 out of 6580941)"],
    [
      "http_req_duration",
      `p(50)=${d("med")} p(95)=${d("p(95)")} p(99)=${d("p(99)")}`,
      "p(50)=209.85ms p(95)=903.86ms p(99)=1.01s",
    ],
  ];
  const endpoints = KINDS.map((k) => {
    const name = `http_req_duration{name:${k}}`;
    const f = (p: string) => formatMs(metric(s, name, p));
    return [k, f("avg"), f("med"), f("p(95)"), f("p(99)"), f("max")];
  });
  const sections = [
    `## Performance test results (ZITADEL's table)\n\nZITADEL's column: its v2.70.0 machine JWT profile grant benchmark (each iteration an OAuth token request). Ours: a mixed authorization load with each request authenticated by a machine client's JWT (verified against the JWKS).${ctx.smoke ? " Smoke: small data and a short run." : ""}\n\n${table(["Metric", "Pemba", "ZITADEL v2.70.0 (published)"], rows)}`,
    `## Endpoint latencies\n\n${table(["request", "avg", "p(50)", "p(95)", "p(99)", "max"], endpoints)}`,
    `## SQL statements by total time\n\n${
      costs === undefined
        ? "The Worker target has no /metrics."
        : table(
            ["statement kind", "total s", "count", "mean"],
            costs.map((c) => [
              c.kind,
              c.seconds.toFixed(3),
              c.count,
              formatMs((1000 * c.seconds) / Math.max(1, c.count)),
            ]),
          )
    }\n\nServer RSS at the end: ${rssMegabytes(target.serverPid).toFixed(0)} MB. JWKS fetched ${issuer.fetches()} time(s) by the server.`,
    `## Server RSS over time\n\nSlope over the last ${((duration - slopeFrom) / 60).toFixed(1)} min (least squares over one reading a second): **${slope.toFixed(1)} MB per 10 minutes** (target: under 5).\n\n\`\`\`\n${rssTextChart(readings, duration >= 600 ? 60 : 10)}\n\`\`\``,
  ];
  return { sections, failures };
}

export const zitadel: Scenario = {
  title:
    "ZITADEL's machine-JWT soak (v2.70.0 benchmark): JWT-authenticated machine clients (local key, local JWKS), 600 VUs for 30 minutes by default, a mixed read/write load.",
  run,
};
