/**
 * Overload: `pemba serve` as a child process, checks sent at a fixed arrival rate (open model: a request is sent
 * on schedule whether or not the earlier ones were answered). First the highest rate of the steps whose p99 stays
 * at most 10 ms (the sustainable rate); then `--factor` (3) x that rate for `--seconds`, while /healthz is asked every 100 ms;
 * then half the sustainable rate, until a second passes with nothing shed and p99 at most 10 ms again. Prints the
 * answers by status, the p99 of the answered checks, /healthz's slowest answer, the server's largest RSS and the
 * seconds to recover.
 *
 * With `--k6`, k6 sends the load instead (k6/overload-open-model.js: its constant-arrival-rate executor, /healthz
 * beside it), so the load generator is not a Node process competing with the server for the same event-loop
 * design; the recovery is read per second from k6's JSON output.
 *
 *   node --experimental-strip-types loadtest/bench-overload.ts [--k6] [--seconds 15] [--factor 3] [--steps 100,200,...]
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runK6 } from "./lib/k6.ts";
import { rssMegabytes, sampleRss } from "./lib/proc.ts";
import { startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "15" },
    /** the overload as a multiple of the sustainable rate */
    factor: { type: "string", default: "3" },
    /** skip the search: the sustainable rate of an earlier run */
    sustainable: { type: "string" },
    steps: { type: "string", default: "100,200,400,800,1200,1600,2400,3200" },
    k6: { type: "boolean", default: false },
    "serve-args": { type: "string", default: "" },
  },
});
const SECONDS = Number(values.seconds);
const STEPS = values.steps!.split(",").map(Number);

const server = await startPemba("memory:", values["serve-args"]!.split(" ").filter(Boolean));
const port = Number(new URL(server.url).port);
// as many connections as requests in flight: many clients, each on its own connection (the server, not the client,
// holds the queue)
const agent = new Agent({ keepAlive: true, maxSockets: 800 });
const CHECK = JSON.stringify({
  metadata: { depth: 20 },
  entity: { type: "doc", id: "1" },
  permission: "view",
  subject: { type: "user", id: "1" },
});

/** One request; resolves with its status (0: no answer within 10 s) and its time in ms. */
function send(path: string, body: string | undefined): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port, path, method: body === undefined ? "GET" : "POST", agent, timeout: 10_000 },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(body);
  });
}

const post = async (path: string, body: unknown) => {
  const r = await fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
};
await post("/v1/tenants/t1/schemas/write", {
  schema: "entity user {}\nentity doc {\n relation owner @user\n permission view = owner\n}",
});
await post("/v1/tenants/t1/data/write", {
  metadata: {},
  tuples: [{ entity: { type: "doc", id: "1" }, relation: "owner", subject: { type: "user", id: "1" } }],
});

interface Window {
  statuses: Map<number, number>;
  times: number[];
}

/** Checks at `rate` per second for `seconds`, in 10 ms ticks; the answers per whole second of sending. */
async function arrivals(rate: number, seconds: number) {
  const windows: Window[] = [];
  const pending: Promise<void>[] = [];
  const started = performance.now();
  let sent = 0;
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    for (; sent < due; sent++) {
      const second = Math.floor((performance.now() - started) / 1000);
      windows[second] ??= { statuses: new Map(), times: [] };
      const w = windows[second]!;
      pending.push(
        send("/v1/tenants/t1/permissions/check", CHECK).then(({ status, ms }) => {
          w.statuses.set(status, (w.statuses.get(status) ?? 0) + 1);
          if (status === 200) w.times.push(ms);
        }),
      );
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await Promise.all(pending);
  return windows;
}

const p99 = (times: number[]) => {
  const s = [...times].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor(s.length * 0.99))]!;
};
const merge = (ws: Window[]) => {
  const statuses = new Map<number, number>();
  const times: number[] = [];
  for (const w of ws) {
    if (w === undefined) continue;
    for (const [k, v] of w.statuses) statuses.set(k, (statuses.get(k) ?? 0) + v);
    times.push(...w.times);
  }
  return { statuses, times };
};
const statusText = (m: Map<number, number>) =>
  [...m]
    .sort((a, b) => a[0] - b[0])
    .map(([k, v]) => `${k === 0 ? "no answer" : k}: ${v}`)
    .join(", ");

if (values.k6) {
  await withK6();
  agent.destroy();
  await server.stop();
  process.exit(0);
}

await arrivals(200, 2); // warm-up
let sustainable = Number(values.sustainable ?? 0);
for (const rate of sustainable > 0 ? [] : STEPS) {
  const { statuses, times } = merge(await arrivals(rate, 5));
  const q = p99(times);
  console.log(`${rate}/s for 5 s: ${statusText(statuses)}; p99 ${q.toFixed(1)} ms`);
  if (q <= 10 && statuses.size === 1 && statuses.has(200)) sustainable = rate;
  else break;
}
if (sustainable === 0) throw new Error("no step held p99 <= 10 ms");
const over = Number(values.factor) * sustainable;
console.log(`sustainable: ${sustainable}/s (p99 <= 10 ms); overload: ${over}/s for ${SECONDS} s`);

let healthMax = 0;
let healthBad = 0;
let rssMax = 0;
let probing = true;
const probes = (async () => {
  while (probing) {
    const h = await send("/healthz", undefined);
    healthMax = Math.max(healthMax, h.ms);
    if (h.status !== 200) healthBad++;
    rssMax = Math.max(rssMax, rssMegabytes(server.pid));
    await new Promise((r) => setTimeout(r, 100));
  }
})();
const overload = merge(await arrivals(over, SECONDS));
console.log(
  `at ${over}/s: ${statusText(overload.statuses)}; p99 of the answered checks ${p99(overload.times).toFixed(1)} ms; /healthz slowest ${healthMax.toFixed(0)} ms, not 200: ${healthBad}; server RSS max ${rssMax.toFixed(0)} MB`,
);
const after = await arrivals(sustainable / 2, 8);
const recovered = after.findIndex(
  (w) => w !== undefined && !w.statuses.has(429) && !w.statuses.has(0) && p99(w.times) <= 10,
);
console.log(
  `after, at ${sustainable / 2}/s: ${after.map((w) => `[${statusText(w.statuses)}; p99 ${p99(w.times).toFixed(1)} ms]`).join(" ")}; recovered in the ${recovered < 0 ? "(not within 8 s)" : `${recovered + 1}. second`}`,
);
probing = false;
await probes;
agent.destroy();
await server.stop();

/** A k6 run of k6/overload-open-model.js at `rate` for `seconds`; its counters, and its JSON samples when asked. */
async function k6Phase(rate: number, seconds: number, jsonOut?: string) {
  const run = await runK6(
    "overload-open-model.js",
    { PEMBA_URL: server.url, RATE: rate, DURATION: `${seconds}s` },
    () => {},
    { jsonOut },
  );
  const m = run.summary.metrics;
  const n = (name: string) => m[name]?.count ?? 0;
  return {
    ok: n("check_200"),
    shed: n("check_shed"),
    shedWithoutRetryAfter: n("check_shed_without_retry_after"),
    other: n("check_other_status"),
    noAnswer: n("check_no_answer"),
    dropped: n("dropped_iterations"),
    p99: m.check_answered_ms?.["p(99)"] ?? Number.NaN,
    healthMax: m.healthz_ms?.max ?? Number.NaN,
    healthBad: n("healthz_not_200"),
  };
}

type Phase = Awaited<ReturnType<typeof k6Phase>>;
function phaseText(p: Phase): string {
  return `200: ${p.ok}, shed (429/503): ${p.shed} (without Retry-After: ${p.shedWithoutRetryAfter}), other: ${p.other}, no answer: ${p.noAnswer}, dropped by k6: ${p.dropped}; p99 of the answered ${p.p99.toFixed(1)} ms; /healthz slowest ${p.healthMax.toFixed(0)} ms, not 200: ${p.healthBad}`;
}

/** The search, the overload and the recovery with k6 as the load generator. */
async function withK6(): Promise<void> {
  await k6Phase(200, 2); // warm-up
  let sustainable = Number(values.sustainable ?? 0);
  for (const rate of sustainable > 0 ? [] : STEPS) {
    const p = await k6Phase(rate, 5);
    console.log(`${rate}/s for 5 s: ${phaseText(p)}`);
    if (p.p99 <= 10 && p.shed + p.other + p.noAnswer + p.dropped === 0) sustainable = rate;
    else break;
  }
  if (sustainable === 0) throw new Error("no step held p99 <= 10 ms");
  const over = Number(values.factor) * sustainable;
  console.log(`sustainable: ${sustainable}/s (p99 <= 10 ms); overload: ${over}/s for ${SECONDS} s`);
  const rss = sampleRss(server.pid, 200);
  const p = await k6Phase(over, SECONDS);
  const rssMax = rss.stop();
  console.log(`at ${over}/s: ${phaseText(p)}; server RSS max ${rssMax.toFixed(0)} MB`);
  // the recovery, second by second, from the samples of the checks
  const dir = mkdtempSync(join(tmpdir(), "pemba-overload-"));
  const file = join(dir, "after.json");
  const after = await k6Phase(sustainable / 2, 8, file);
  const seconds = new Map<number, { statuses: Map<number, number>; times: number[] }>();
  let first = Number.POSITIVE_INFINITY;
  const points: { t: number; status: number; ms: number }[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.includes('"metric":"http_req_duration"') || !line.includes('"type":"Point"')) continue;
    const d = (JSON.parse(line) as { data: { time: string; value: number; tags: Record<string, string> } })
      .data;
    if (d.tags.name !== "check") continue;
    const t = Date.parse(d.time);
    first = Math.min(first, t);
    points.push({ t, status: Number(d.tags.status), ms: d.value });
  }
  rmSync(dir, { recursive: true, force: true });
  for (const pt of points) {
    const s = Math.floor((pt.t - first) / 1000);
    let w = seconds.get(s);
    if (w === undefined) {
      w = { statuses: new Map(), times: [] };
      seconds.set(s, w);
    }
    w.statuses.set(pt.status, (w.statuses.get(pt.status) ?? 0) + 1);
    if (pt.status === 200) w.times.push(pt.ms);
  }
  const ordered = [...seconds.entries()].sort((a, b) => a[0] - b[0]).map(([, w]) => w);
  const recovered = ordered.findIndex(
    (w) => w.statuses.size === 1 && w.statuses.has(200) && p99(w.times) <= 10,
  );
  console.log(
    `after, at ${sustainable / 2}/s: ${phaseText(after)}\n  by second: ${ordered.map((w) => `[${statusText(w.statuses)}; p99 ${p99(w.times).toFixed(1)} ms]`).join(" ")}; recovered in the ${recovered < 0 ? "(not within 8 s)" : `${recovered + 1}. second`}`,
  );
}
