/**
 * The Worker at the edge, as users run it: the shipped entry (packages/worker/src/index.ts) with the shipped
 * wrangler.toml (`d1:DB`, local D1) under `wrangler dev --ip 127.0.0.1`, with D1's latency added around the D1
 * binding by the entry's own PEMBA_D1_SIMULATE var (packages/worker/src/d1-around.ts), and a new isolate every
 * --requests requests.
 *
 *   node --experimental-strip-types loadtest/bench-edge.ts [--ids 100000] [--isolates 5] [--requests 300]
 *     [--latency replica=3ms,primary=100ms,lag=0-2s] [--zipf 1.0] [--fresh-every 10] [--state DIR] [--port 43000]
 *
 * 1. Seed (once per --state folder, latency off): Permify's schema and seed writer (--ids ids: 6 tuples + 2
 *    attributes each; 100,000 = the 800,000-row dataset) into a persisted local D1, spot checks.
 * 2. Isolates: each is a new `wrangler dev` on the same persisted D1 (a new workerd process, so a new isolate with
 *    nothing cached: restarting is the one way to get a new isolate locally). It answers --requests requests one
 *    at a time: checks of `content:i view user:u` with i drawn from a Zipf distribution (exponent --zipf) over the
 *    ids and u one of i's owner, follower, blocked user or another Zipf-drawn user, each answer compared with the
 *    seed's rule; every --fresh-every-th request writes a tuple and checks with the write's snap token (it must see
 *    the write).
 * 3. Report, per kind of request (first = the isolate's first check; warm = every later check; no-D1 = the warm
 *    checks that sent no D1 statement): client time (through wrangler dev's proxy) and the Worker's own time (its
 *    request log line's `ms`); per isolate: rows read (every request line and background line of the log) next to
 *    the tenant's rows, and CPU seconds of the workerd processes (the Worker, the local D1 it runs beside, and
 *    wrangler's proxy Worker) while the isolate served.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startWranglerDev, type WranglerDev } from "@pemba/worker/testing";
import { postJson, SEED_SCHEMA, seed, spotCheck, TENANT_ID, writeSeedSchema } from "./lib/seed.ts";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "100000" },
    isolates: { type: "string", default: "5" },
    requests: { type: "string", default: "300" },
    latency: { type: "string", default: "off" },
    zipf: { type: "string", default: "1.0" },
    "fresh-every": { type: "string", default: "10" },
    state: { type: "string" },
    /** First of the ports for wrangler dev (each start takes the next two: HTTP, inspector); default: free ports. */
    port: { type: "string" },
    /** More vars for the Worker, NAME=value, comma separated (e.g. replica settings). */
    vars: { type: "string", default: "" },
  },
});
const IDS = Number(values.ids);
const ISOLATES = Number(values.isolates);
const REQUESTS = Number(values.requests);
const FRESH_EVERY = Number(values["fresh-every"]);
const ZIPF = Number(values.zipf);
const STATE = resolve(values.state ?? `/tmp/pemba-edge-${IDS}`);
const EXTRA_VARS = Object.fromEntries(
  values.vars
    .split(",")
    .filter((v) => v.includes("="))
    .map((v) => [v.slice(0, v.indexOf("=")), v.slice(v.indexOf("=") + 1)]),
);
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

let nextPort = values.port === undefined ? undefined : Number(values.port);

/** Whether nothing listens on 127.0.0.1:port (wrangler's and workerd's own ports are the OS's picks, maybe in range). */
const isFree = (port: number) =>
  new Promise<boolean>((done) => {
    const probe = createServer();
    probe.once("error", () => done(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => done(true)));
  });

/** The next pair of free ports from --port on (HTTP, inspector); undefined without --port. */
async function nextPorts(): Promise<number | undefined> {
  while (nextPort !== undefined) {
    const port = nextPort;
    nextPort += 2;
    if ((await isFree(port)) && (await isFree(port + 1))) return port;
  }
  return undefined;
}

/** The shipped Worker and wrangler.toml, with the request log on and D1's latency as given. */
async function start(latency: string): Promise<WranglerDev> {
  const vars = { PEMBA_LOG_LEVEL: "info", PEMBA_D1_SIMULATE: latency, ...EXTRA_VARS };
  return startWranglerDev(vars, 180_000, STATE, "log", undefined, await nextPorts());
}

// 1. seed once per state folder
const marker = join(STATE, `seeded-${IDS}`);
if (!existsSync(marker)) {
  mkdirSync(STATE, { recursive: true });
  const dev = await start("off");
  try {
    const version = await writeSeedSchema(dev.url);
    const seeded = await seed(dev.url, version, log, { totalIds: IDS });
    log(`seeded ${seeded.tuples + seeded.attributes} rows in ${seeded.seconds.toFixed(1)} s`);
    await spotCheck(dev.url, version, undefined, IDS);
  } finally {
    await dev.close();
  }
  writeFileSync(marker, `${SEED_SCHEMA.length}\n`);
}
const TENANT_ROWS = 8 * IDS;

/** Zipf(s) ranks 0..n-1 by inverse CDF over the cumulative weights 1/(k+1)^s. */
function zipfSampler(n: number, s: number): () => number {
  const cumulative = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) {
    sum += 1 / (k + 1) ** s;
    cumulative[k] = sum;
  }
  return () => {
    const x = Math.random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}
const zipf = zipfSampler(IDS, ZIPF);

/** The seed's rule for `content:i view user:u` (permify.perm over permify-seed-writer.js's data). */
function allowed(i: number, u: number): boolean {
  const follower = (i + 1) % IDS;
  const blocked = (i + 2) % IDS;
  return u === i || ((i % 4 === 0 || u === follower) && u !== blocked);
}

interface Sample {
  /** At the client: the request through wrangler dev's proxy. */
  ms: number;
  /** The Worker's own time (its request line's `ms`). */
  worker: number;
  statements: number;
  rows: number;
}
type Kind = "first" | "warm" | "no-D1" | "fresh-token";
const samples: Record<Kind, Sample[]> = { first: [], warm: [], "no-D1": [], "fresh-token": [] };
interface IsolateFigures {
  startSeconds: number;
  rowsRead: number;
  backgroundRows: number;
  backgroundDone: number;
  cpuSeconds: number;
  workerMs: number;
}
const isolates: IsolateFigures[] = [];
let stale = 0;

/** The Worker's JSON log lines so far. */
function workerLines(dev: WranglerDev): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of dev.output().split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a line cut by the pipe's chunking: read again at the next look
    }
  }
  return out;
}

/** CPU seconds (user + system) of the workerd processes under `pid`. */
function workerdCpuSeconds(pid: number): number {
  const ticks = 100; // USER_HZ
  const children = new Map<number, number[]>();
  const names = new Map<number, string>();
  const cpu = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const parent = Number(fields[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
      names.set(Number(entry), name);
      cpu.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / ticks);
    } catch {
      // the process ended meanwhile
    }
  }
  let total = 0;
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      if (names.get(c)?.includes("workerd")) total += cpu.get(c) ?? 0;
      walk(c);
    }
  };
  walk(pid);
  return total;
}

const checkBody = (entity: number, subject: string, snapToken = "") =>
  JSON.stringify({
    metadata: { snap_token: snapToken, schema_version: "", depth: 20 },
    entity: { type: "content", id: String(entity) },
    permission: "view",
    subject: { type: "user", id: subject },
  });
const nonce = Date.now().toString(36);

/**
 * The timed requests' client: node:http on one kept-alive socket with Nagle off, the leanest client Node has
 * (Node's fetch adds about 0.5 ms per request here: loadtest/bench-edge-proxy.ts).
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** Sends one request; its Worker line is the last request line once it is in the output. */
async function timed(dev: WranglerDev, path: string, body: string): Promise<{ ms: number; body: string }> {
  const url = new URL(path, dev.url);
  const started = performance.now();
  const [status, text] = await new Promise<[number, string]>((done, fail) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => done([res.statusCode ?? 0, Buffer.concat(chunks).toString()]));
        res.on("error", fail);
      },
    );
    req.on("error", fail);
    req.setNoDelay(true);
    req.end(body);
  });
  const ms = performance.now() - started;
  if (status < 200 || status >= 300) throw new Error(`${path}: ${status} ${text.slice(0, 300)}`);
  return { ms, body: text };
}

/** The request line the Worker wrote for the `n`-th check of this isolate (waits for it to reach the output). */
async function checkLine(dev: WranglerDev, n: number): Promise<Record<string, unknown>> {
  for (let tries = 0; ; tries++) {
    const lines = workerLines(dev).filter((l) => l.route === "/v1/tenants/:tenant_id/permissions/check");
    if (lines.length > n) return lines[n]!;
    if (tries > 200) throw new Error(`the Worker's line of check ${n} did not arrive`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const checkPath = `/v1/tenants/${TENANT_ID}/permissions/check`;

for (let isolate = 0; isolate < ISOLATES; isolate++) {
  const spawned = performance.now();
  const dev = await start(values.latency);
  const startSeconds = (performance.now() - spawned) / 1000;
  const cpuBefore = workerdCpuSeconds(dev.child.pid!);
  let checks = 0;
  try {
    for (let i = 0; i < REQUESTS; i++) {
      if (i > 0 && FRESH_EVERY > 0 && i % FRESH_EVERY === 0) {
        // content X (private: X % 4 != 0) gains a new follower of its owner; the check with the token must allow
        const x = 4 * zipf() + 1;
        const id = x % IDS;
        const follower = `edge-${nonce}-${isolate}-${i}`;
        const written = await postJson<{ snap_token: string }>(
          `${dev.url}/v1/tenants/${TENANT_ID}/data/write`,
          {
            metadata: { schema_version: "" },
            tuples: [
              {
                entity: { type: "user", id: String(id) },
                relation: "follower",
                subject: { type: "user", id: follower },
              },
            ],
            attributes: [],
          },
        );
        const r = await timed(dev, checkPath, checkBody(id, follower, written.snap_token));
        if (JSON.parse(r.body).can !== "CHECK_RESULT_ALLOWED") stale++;
        const line = await checkLine(dev, checks++);
        samples["fresh-token"].push(sampleOf(r.ms, line));
        continue;
      }
      const entity = zipf();
      const pick = Math.floor(Math.random() * 4);
      const subject = pick < 3 ? (entity + pick) % IDS : zipf();
      const r = await timed(dev, checkPath, checkBody(entity, String(subject)));
      const can = JSON.parse(r.body).can;
      const expected = allowed(entity, subject) ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED";
      if (can !== expected)
        throw new Error(`content:${entity} view user:${subject}: ${r.body}, expected ${expected}`);
      const sample = sampleOf(r.ms, await checkLine(dev, checks++));
      if (i === 0) {
        samples.first.push(sample);
        log(
          `isolate ${isolate + 1}: first check ${sample.ms.toFixed(1)} ms at the client, ${sample.worker} ms in the Worker, ${sample.statements} statements, ${sample.rows} rows`,
        );
        continue;
      }
      samples.warm.push(sample);
      if (sample.statements === 0) samples["no-D1"].push(sample);
    }
    await new Promise((r) => setTimeout(r, 500));
    const lines = workerLines(dev);
    const background = lines.filter((l) => l.msg === "background work done");
    const rows = (ls: Record<string, unknown>[]) => ls.reduce((n, l) => n + Number(l.rows_read ?? 0), 0);
    const figures: IsolateFigures = {
      startSeconds,
      rowsRead: rows(lines),
      backgroundRows: rows(background),
      backgroundDone: background.length,
      cpuSeconds: workerdCpuSeconds(dev.child.pid!) - cpuBefore,
      workerMs: lines.reduce((n, l) => n + (l.route === undefined ? 0 : Number(l.ms ?? 0)), 0),
    };
    isolates.push(figures);
    log(
      `isolate ${isolate + 1}: started in ${startSeconds.toFixed(1)} s; rows read ${figures.rowsRead} (background ${figures.backgroundRows}, ${figures.backgroundDone} pieces of background work done) of the tenant's ${TENANT_ROWS}; workerd CPU ${figures.cpuSeconds.toFixed(2)} s`,
    );
  } finally {
    await dev.close();
  }
}

function sampleOf(ms: number, line: Record<string, unknown>): Sample {
  return {
    ms,
    worker: Number(line.ms ?? 0),
    statements: Number(line.statements ?? 0),
    rows: Number(line.rows_read ?? 0),
  };
}

// 3. report
const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
const fmt = (n: number, digits = 1) => (Number.isNaN(n) ? "-" : n.toFixed(digits));
console.log(
  `\nbench-edge: shipped Worker and wrangler.toml, ids ${IDS} (${TENANT_ROWS} rows), PEMBA_D1_SIMULATE=${values.latency}, zipf ${ZIPF}, ${ISOLATES} isolates x ${REQUESTS} requests${values.vars ? `, vars ${values.vars}` : ""}`,
);
console.log(
  "| request | n | client p50 / p99 / max ms | Worker p50 / p99 ms | statements p50/max | rows p50/max |",
);
console.log("| --- | --: | --: | --: | --: | --: |");
for (const [kind, xs] of Object.entries(samples)) {
  const of = (f: (s: Sample) => number) => xs.map(f);
  const range = (v: number[]) => `${fmt(pct(v, 50), 0)}/${fmt(pct(v, 100), 0)}`;
  const client = of((s) => s.ms);
  const worker = of((s) => s.worker);
  console.log(
    `| ${kind} | ${xs.length} | ${fmt(pct(client, 50))} / ${fmt(pct(client, 99))} / ${fmt(pct(client, 100))} | ` +
      `${fmt(pct(worker, 50), 0)} / ${fmt(pct(worker, 99), 0)} | ${range(of((s) => s.statements))} | ${range(of((s) => s.rows))} |`,
  );
}
console.log(`fresh-token checks that did not see their write: ${stale} of ${samples["fresh-token"].length}`);
console.log(
  `seconds from spawning wrangler dev until /healthz answered: ${isolates.map((s) => fmt(s.startSeconds)).join(", ")}`,
);
console.log(
  `rows read per isolate over its life (tenant: ${TENANT_ROWS}): ${isolates.map((s) => s.rowsRead).join(", ")}; of them by background work: ${isolates.map((s) => s.backgroundRows).join(", ")}`,
);
console.log(
  `workerd CPU seconds per isolate (the Worker, local D1, wrangler's proxy): ${isolates.map((s) => fmt(s.cpuSeconds, 2)).join(", ")}; the Worker's own ms summed over its request lines: ${isolates.map((s) => s.workerMs).join(", ")}`,
);
