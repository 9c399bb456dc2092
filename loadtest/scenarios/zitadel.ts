/**
 * zitadel: ZITADEL's machine-JWT soak (600 VUs, 30 minutes) for Pemba: a local issuer (ES256 key, JWKS on
 * 127.0.0.1), one access token per VU (a machine client), Pemba in JWKS mode, and k6/zitadel-soak.js's mixed
 * read/write load. The report follows ZITADEL's table, including the top 3 most expensive SQL statements from the
 * server's per-statement metrics (pemba_sql_query_duration_seconds on /metrics).
 * Length: --duration, else PEMBA_SOAK_DURATION (e.g. 5m), else 30m; VUs: PEMBA_SOAK_VUS, else 600.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type MemorySeries, memorySvg } from "../lib/chart.ts";
import { startIssuer } from "../lib/issuer.ts";
import { metric } from "../lib/k6.ts";
import { rssMegabytes, rssSlopePer10Minutes, rssSteps, rssTextChart, sampleRss } from "../lib/proc.ts";
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
  const heap = sampleHeap(() => target.metrics(tokens[0]!), 30_000);
  const result = await ctx.k6(
    "zitadel-soak.js",
    { PEMBA_URL: target.url, TOKENS_FILE: tokensFile, VUS: vus, DURATION: `${duration}s`, ...data },
    "soak",
  );
  const maxRss = rss.stop();
  const readings = rss.samples();
  const heapReadings = await heap.stop();
  // the last 20 minutes of a 30-minute soak (warm-up left out); a shorter run: its last two thirds
  const slopeFrom = duration >= 1800 ? duration - 1200 : Math.round(duration / 3);
  const slope = rssSlopePer10Minutes(readings, slopeFrom);
  // the working set grows with the rows the soak writes (a cache filling toward its budget): the RSS besides it
  const besidesWorkingSet = lessWorkingSet(readings, heapReadings);
  const slopeBesides =
    besidesWorkingSet === undefined ? Number.NaN : rssSlopePer10Minutes(besidesWorkingSet, slopeFrom);
  const workingSetSlope = slope - slopeBesides;
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
    }\n\nServer RSS at the end: ${rssAtEnd(target.serverPid)}. JWKS fetched ${issuer.fetches()} time(s) by the server${fetchMinutes(issuer.fetchTimes(), startedAt)}. ${stepsLine(rssSteps(readings, 2, 10))}`,
    `## Server RSS over time\n\nSlope over the last ${((duration - slopeFrom) / 60).toFixed(1)} min (least squares over one reading a second): **${slope.toFixed(1)} MB per 10 minutes** (target: under 5).${Number.isNaN(slopeBesides) ? "" : ` Of it, the replica's working set: ${workingSetSlope.toFixed(1)} MB per 10 minutes (it holds the rows the soak writes, up to its budget); the RSS besides the working set: **${slopeBesides.toFixed(1)} MB per 10 minutes**.`}\n\n\`\`\`\n${rssTextChart(readings, duration >= 600 ? 60 : 10)}\n\`\`\``,
  ];
  if (heapReadings.length > 0) sections.push(heapSection(readings, heapReadings));
  const series: MemorySeries[] = [{ name: "RSS", color: "#d62728", points: readings }];
  if (heapReadings.length > 0)
    series.push(
      {
        name: "V8 heap used",
        color: "#1f77b4",
        points: heapReadings.map((h) => ({ seconds: h.seconds, megabytes: h.heapUsed })),
      },
      {
        name: "V8 heap total",
        color: "#9467bd",
        points: heapReadings.map((h) => ({ seconds: h.seconds, megabytes: h.heapTotal })),
      },
      {
        name: "working set (estimate)",
        color: "#2ca02c",
        points: heapReadings.map((h) => ({ seconds: h.seconds, megabytes: h.workingSet })),
      },
    );
  const charts = [
    {
      suffix: "memory",
      caption: "Server memory over time",
      svg: memorySvg(series, `zitadel soak on ${target.name}: server memory`),
    },
  ];
  return { sections, failures, charts };
}

/** The server's RSS now, or why there is none (the process is gone: `wrangler dev` restarted workerd). */
function rssAtEnd(pid: number): string {
  try {
    return `${rssMegabytes(pid).toFixed(0)} MB`;
  } catch {
    return `not read: process ${pid} is gone`;
  }
}

interface HeapReading {
  seconds: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  workingSet: number;
  workingSetEntries: number;
}

/** A gauge's value in a Prometheus text, or NaN when absent. */
function gaugeOf(text: string, name: string): number {
  const match = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  return match === null ? Number.NaN : Number(match[1]);
}

/**
 * Reads the server's heap and working-set gauges from /metrics every `everyMs` (Node targets; the Worker has no
 * /metrics and gives no readings): what the RSS is made of, to tell a cache filling toward its budget from a leak.
 */
function sampleHeap(
  read: () => Promise<string | undefined>,
  everyMs: number,
): { stop(): Promise<HeapReading[]> } {
  const started = Date.now();
  const readings: HeapReading[] = [];
  let pending: Promise<void> = Promise.resolve();
  const take = () => {
    pending = read()
      .then((text) => {
        if (text === undefined) return;
        const mb = (name: string) => gaugeOf(text, name) / 1048576;
        readings.push({
          seconds: (Date.now() - started) / 1000,
          heapUsed: mb("pemba_nodejs_heap_size_used_bytes"),
          heapTotal: mb("pemba_nodejs_heap_size_total_bytes"),
          external: mb("pemba_nodejs_external_memory_bytes"),
          workingSet: mb("pemba_working_set_bytes"),
          workingSetEntries: gaugeOf(text, "pemba_working_set_entries"),
        });
      })
      .catch(() => {
        // a scrape that failed under load: the next one counts
      });
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await pending;
      return readings;
    },
  };
}

/** Each RSS reading less the working set's bytes at the nearest /metrics reading; undefined without readings. */
function lessWorkingSet(
  rss: readonly { seconds: number; megabytes: number }[],
  heap: readonly HeapReading[],
): { seconds: number; megabytes: number }[] | undefined {
  if (heap.length === 0) return undefined;
  let i = 0;
  return rss.map((r) => {
    while (
      i + 1 < heap.length &&
      Math.abs(heap[i + 1]!.seconds - r.seconds) <= Math.abs(heap[i]!.seconds - r.seconds)
    )
      i++;
    return { seconds: r.seconds, megabytes: r.megabytes - heap[i]!.workingSet };
  });
}

/** RSS beside the heap and the working set, one row a minute. */
function heapSection(
  rss: readonly { seconds: number; megabytes: number }[],
  heap: readonly HeapReading[],
): string {
  const rows: string[] = [];
  for (let minute = 0; ; minute++) {
    const t = minute * 60;
    if (heap.length === 0 || t > heap.at(-1)!.seconds + 30) break;
    const h = heap.reduce((best, x) => (Math.abs(x.seconds - t) < Math.abs(best.seconds - t) ? x : best));
    const r = rss.reduce((best, x) => (Math.abs(x.seconds - t) < Math.abs(best.seconds - t) ? x : best));
    rows.push(
      `| ${minute} | ${r.megabytes.toFixed(0)} | ${h.heapUsed.toFixed(1)} | ${h.heapTotal.toFixed(1)} | ${h.external.toFixed(1)} | ${h.workingSet.toFixed(1)} | ${h.workingSetEntries} |`,
    );
  }
  return `## What the RSS holds\n\nFrom the server's /metrics every 30 s (V8's heap, memory outside it, and the replica's working set as estimated against its --replica-memory budget), nearest the start of each minute.\n\n| min | RSS MB | heap used MB | heap total MB | external MB | working set MB | entries |\n| --- | --- | --- | --- | --- | --- | --- |\n${rows.join("\n")}`;
}

export const zitadel: Scenario = {
  title:
    "ZITADEL's machine-JWT soak (v2.70.0 benchmark): JWT-authenticated machine clients (local key, local JWKS), 600 VUs for 30 minutes by default, a mixed read/write load.",
  run,
};

/** The JWKS fetches' times in minutes since the soak started (fetches before it, during the setup, as negative). */
function fetchMinutes(times: readonly number[], startedAt: Date): string {
  if (times.length === 0) return "";
  return ` (at ${times.map((t) => `${((t - startedAt.getTime()) / 60_000).toFixed(2)}`).join(", ")} min)`;
}

/** The RSS steps (2 MB or more within 10 s), to set beside the JWKS fetches and the heap readings. */
function stepsLine(steps: readonly { seconds: number; from: number; to: number }[]): string {
  if (steps.length === 0) return "No RSS step of 2 MB or more within 10 s.";
  const shown = steps
    .slice(0, 20)
    .map((s) => `${(s.seconds / 60).toFixed(2)} min ${s.from.toFixed(0)} -> ${s.to.toFixed(0)} MB`);
  return `RSS steps of 2 MB or more within 10 s: ${shown.join("; ")}${steps.length > 20 ? ` (and ${steps.length - 20} more)` : ""}.`;
}
