/**
 * The Worker at the edge (issue 19 §3): Pemba's Worker in workerd (`wrangler dev`) behind a D1 binding that adds
 * D1's latencies (loadtest/worker-edge: a replica in the region, the primary, replica lag), with isolates churned.
 *
 *   node --experimental-strip-types loadtest/bench-edge.ts [--ids 100000] [--isolates 5] [--requests 200]
 *     [--seconds 0] [--replica-ms 3] [--primary-ms 100] [--lag-ms 0-2000] [--fresh-every 10] [--state DIR]
 *     [--port 43000]
 *
 * 1. Seed (once per --state folder, latencies off): Permify's schema and seed writer (--ids ids: 6 tuples + 2
 *    attributes each; 100,000 = the 800,000-row dataset) into a persisted local D1, spot checks.
 * 2. --isolates times: a new `wrangler dev` on that state (a new workerd process, so a new isolate), then checks one
 *    after another (the seeded spot checks, round robin) until --requests requests or --seconds seconds:
 *    - cold: the isolate's first request (it also opens the store);
 *    - loading: checks while the isolate's background work (ctx.waitUntil: a tenant load) is still pending;
 *    - warm: checks after it;
 *    - fresh / fresh-loading: every --fresh-every-th request writes a tuple (content X's owner gains a new follower)
 *      and checks with the write's snap token (after / while the isolate loads the tenant): it must be ALLOWED
 *      (never stale); its primary round trips are counted, and a check with more than one is printed trip by trip.
 *    Each isolate's first check is printed trip by trip: where each D1 round trip went (replica or primary), the
 *    latency the wrapper added, its span within the request, rows, statements.
 * 3. Per kind, p50 / p99 of two latencies: at the client (through wrangler dev's local proxy: `ping` is that hop
 *    answered by the bench Worker without Pemba) and inside the Worker (Server-Timing from the bench Worker's wrapper:
 *    from the wrapper's entry to Pemba's response; workerd's clock advances during CPU too, calibrated at start);
 *    of the Worker's time, the ms with a D1 round trip in flight and the ms local D1 took beyond the simulated
 *    latency (its own execution, not part of D1's latency on Cloudflare), and the Worker's time at D1's latency
 *    (each trip's span replaced by its simulated latency: what a deployment would see, CPU as here); D1 round
 *    trips, primary round trips and
 *    rows read per request (from the wrapper's response headers); warm checks with a D1 read other than the
 *    freshness look; rows read by background loads; the seconds until an isolate finished loading; the seconds from
 *    spawning wrangler dev until /healthz answered (process start, module evaluation: not part of any check).
 *
 * --port N: each `wrangler dev` listens on the next free pair from N up (HTTP, then its inspector on the next port);
 * default: ports the system picks.
 * The bench Worker's replica is a second local database fed late (loadtest/worker-edge): a state folder seeded
 * before it existed lacks it, hence the state folder's default name.
 * --worker-root runs another checkout's Worker (e.g. a base commit's worktree) with this bench's Worker wrapper.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startWranglerDev, type WranglerDev } from "@pemba/worker/testing";
import { LOADTEST_DIR } from "./lib/k6.ts";
import {
  postJson,
  SEED_SCHEMA,
  seed,
  spotCheck,
  spotChecks,
  TENANT_ID,
  writeSeedSchema,
} from "./lib/seed.ts";
import type { Trip } from "./worker-edge/index.ts";

const { values } = parseArgs({
  options: {
    ids: { type: "string", default: "100000" },
    isolates: { type: "string", default: "5" },
    requests: { type: "string", default: "200" },
    seconds: { type: "string", default: "0" },
    "replica-ms": { type: "string", default: "3" },
    "primary-ms": { type: "string", default: "100" },
    "lag-ms": { type: "string", default: "0-2000" },
    "fresh-every": { type: "string", default: "10" },
    state: { type: "string" },
    "worker-root": { type: "string" },
    /** First of the ports for wrangler dev (each start takes the next two: HTTP, inspector); default: free ports. */
    port: { type: "string" },
  },
});
const IDS = Number(values.ids);
const ISOLATES = Number(values.isolates);
const REQUESTS = Number(values.requests);
const SECONDS = Number(values.seconds);
const FRESH_EVERY = Number(values["fresh-every"]);
const [LAG_MIN, LAG_MAX = LAG_MIN] = values["lag-ms"].split("-");
const STATE = resolve(values.state ?? `/tmp/pemba-edge-replicated-${IDS}`);
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

/** The bench Worker's folder: this checkout's, or a copy inside --worker-root (which resolves its own packages). */
function workerConfig(): string {
  const own = join(LOADTEST_DIR, "worker-edge");
  const root = values["worker-root"];
  if (root === undefined) return join(own, "wrangler.toml");
  const there = join(resolve(root), "loadtest", "worker-edge");
  mkdirSync(there, { recursive: true });
  for (const file of ["index.ts", "wrangler.toml"]) copyFileSync(join(own, file), join(there, file));
  if (!existsSync(join(resolve(root), "packages", "worker", "src", "handler.ts"))) {
    // a Worker from before createWorker (built on its first request): the wrapper takes its default export
    const wrapper = readFileSync(join(there, "index.ts"), "utf8")
      .replace('import { env as moduleEnv } from "cloudflare:workers";\n', "")
      .replace(
        /import \{ createWorker, (.*) \} from "@pemba\/worker\/handler";/,
        'import pemba, { $1 } from "@pemba/worker";',
      )
      .replace(/\nconst pemba = createWorker\(.*\);\n/, "\n");
    writeFileSync(join(there, "index.ts"), wrapper);
  }
  return join(there, "wrangler.toml");
}
const CONFIG = workerConfig();

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

async function start(latency: boolean): Promise<WranglerDev> {
  const vars: Record<string, string> = latency
    ? {
        EDGE_REPLICA_MS: values["replica-ms"],
        EDGE_PRIMARY_MS: values["primary-ms"],
        EDGE_LAG_MIN_MS: LAG_MIN!,
        EDGE_LAG_MAX_MS: LAG_MAX,
      }
    : {};
  return startWranglerDev(vars, 180_000, STATE, "warn", CONFIG, await nextPorts());
}

// 1. seed once per state folder
const marker = join(STATE, `seeded-${IDS}`);
if (!existsSync(marker)) {
  mkdirSync(STATE, { recursive: true });
  const dev = await start(false);
  try {
    const version = await writeSeedSchema(dev.url);
    const seeded = await seed(dev.url, version, log, { totalIds: IDS });
    log(`seeded ${seeded.tuples + seeded.attributes} rows in ${seeded.seconds.toFixed(1)} s`);
    await spotCheck(dev.url, version, undefined, IDS);
    await fetch(`${dev.url}/__edge/flush`);
  } finally {
    await dev.close();
  }
  writeFileSync(marker, `${SEED_SCHEMA.length}\n`);
}

interface Sample {
  /** At the client: the request through wrangler dev's local proxy. */
  ms: number;
  /** Inside the Worker (Server-Timing, the bench Worker's wrapper around Pemba's fetch). */
  worker: number;
  d1: number;
  primary: number;
  rows: number;
  /** Of `worker`: ms during which a D1 round trip was in flight (the union of the trips' spans). */
  d1Wait: number;
  /** Of the trips: ms beyond the simulated latency (local D1's own execution, the hop to its workerd service). */
  localD1: number;
  /**
   * `worker` with each round trip taking its simulated latency only (D1's on Cloudflare): the Worker's time minus
   * the trips' span in flight plus the simulated trips' span in flight (parallel trips overlap in both).
   */
  atD1: number;
  trips: Trip[];
}
type Kind = "cold" | "loading" | "warm" | "fresh-loading" | "fresh" | "ping";
const samples: Record<Kind, Sample[]> = {
  cold: [],
  loading: [],
  warm: [],
  "fresh-loading": [],
  fresh: [],
  ping: [],
};
const loadSeconds: number[] = [];
const startSeconds: number[] = [];
const backgroundRows: number[] = [];
let stale = 0;

/** The union of the trips' [start, end] spans. */
function waited(trips: Trip[]): number {
  let total = 0;
  let until = -1;
  for (const t of [...trips].sort((a, b) => a.start - b.start)) {
    if (t.end <= until) continue;
    total += t.end - Math.max(t.start, until);
    until = t.end;
  }
  return total;
}

async function timed(url: string, init?: RequestInit): Promise<{ sample: Sample; body: string }> {
  const started = performance.now();
  const response = await fetch(url, init);
  const body = await response.text();
  const ms = performance.now() - started;
  if (!response.ok && !url.endsWith("/healthz"))
    throw new Error(`${url}: ${response.status} ${body.slice(0, 300)}`);
  const header = (name: string) => Number(response.headers.get(name) ?? 0);
  const trips = JSON.parse(response.headers.get("x-edge-trips") ?? "[]") as Trip[];
  const worker = Number(/worker;dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "")?.[1] ?? 0);
  return {
    sample: {
      ms,
      worker,
      d1: header("x-edge-d1"),
      primary: header("x-edge-primary"),
      rows: header("x-edge-rows"),
      d1Wait: waited(trips),
      localD1: trips.reduce((n, t) => n + (t.end - t.start - t.ms), 0),
      atD1: worker - waited(trips) + waited(trips.map((t) => ({ ...t, end: t.start + t.ms }))),
      trips,
    },
    body,
  };
}

/** A request's round trips, one line each: where, simulated latency, span in the request, rows, statements. */
const tripLines = (trips: Trip[]) =>
  trips
    .map(
      (t) =>
        `    ${t.at} +${t.ms} ms  ${t.start.toFixed(0)}-${t.end.toFixed(0)} ms  ${t.rows} rows  ${t.sql.join(" ; ")}`,
    )
    .join("\n");

const checks = spotChecks(IDS);
const checkBody = (entity: string, subject: string, snapToken = "") => {
  const [entityType, entityId] = entity.split(":");
  const [, subjectId] = subject.split(":");
  return JSON.stringify({
    metadata: { snap_token: snapToken, schema_version: "", depth: 20 },
    entity: { type: entityType, id: entityId },
    permission: "view",
    subject: { type: "user", id: subjectId },
  });
};
const post = (body: string): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body,
});
const nonce = Date.now().toString(36);

// workerd's clock (performance.now) in wrangler dev advances during CPU as well as I/O: calibrate once
{
  const dev = await start(false);
  try {
    const spin = (await (await fetch(`${dev.url}/__edge/spin?n=20000000`)).json()) as { ms: number };
    log(
      `workerd clock over 2e7 loop iterations without I/O: ${spin.ms.toFixed(1)} ms (0 would mean a frozen clock)`,
    );
  } finally {
    await dev.close();
  }
}

// 2. isolates
for (let isolate = 0; isolate < ISOLATES; isolate++) {
  const spawned = performance.now();
  const dev = await start(true);
  // wrangler dev + workerd process start until /healthz answers (the bench Worker's module evaluated; Pemba not opened)
  startSeconds.push((performance.now() - spawned) / 1000);
  const checkUrl = `${dev.url}/v1/tenants/${TENANT_ID}/permissions/check`;
  const isLoaded = async () =>
    ((await (await fetch(`${dev.url}/__edge/stats`)).json()) as { pending: number; started: number })
      .pending === 0;
  try {
    const began = performance.now();
    let loaded: number | undefined;
    for (let i = 0; i < REQUESTS; i++) {
      if (SECONDS > 0 && performance.now() - began > SECONDS * 1000) break;
      if (i > 0 && loaded === undefined && (await isLoaded())) loaded = (performance.now() - began) / 1000;
      if (i > 0 && FRESH_EVERY > 0 && i % FRESH_EVERY === 0) {
        // content X (private: X % 4 != 0) gains a new follower of its owner; the check with the token must allow
        const x = 4 * ((isolate * REQUESTS + i) % Math.floor(IDS / 4)) + 1;
        const follower = `edge-${nonce}-${isolate}-${i}`;
        const written = await postJson<{ snap_token: string }>(
          `${dev.url}/v1/tenants/${TENANT_ID}/data/write`,
          {
            metadata: { schema_version: "" },
            tuples: [
              {
                entity: { type: "user", id: String(x) },
                relation: "follower",
                subject: { type: "user", id: follower },
              },
            ],
            attributes: [],
          },
        );
        const { sample, body } = await timed(
          checkUrl,
          post(checkBody(`content:${x}`, `user:${follower}`, written.snap_token)),
        );
        if (JSON.parse(body).can !== "CHECK_RESULT_ALLOWED") stale++;
        const kind = loaded === undefined ? "fresh-loading" : "fresh";
        if (kind === "fresh-loading" && samples[kind].length === 0)
          log(`first fresh-token check while the tenant loads:\n${tripLines(sample.trips)}`);
        samples[kind].push(sample);
        if (sample.primary > 1)
          log(`fresh-token check with ${sample.primary} primary trips:\n${tripLines(sample.trips)}`);
        continue;
      }
      const c = checks[i % checks.length]!;
      const { sample, body } = await timed(checkUrl, post(checkBody(c.entity, c.subject)));
      if (JSON.parse(body).can !== c.expected) throw new Error(`${c.entity} view ${c.subject}: ${body}`);
      if (i === 0) {
        samples.cold.push(sample);
        log(
          `isolate ${isolate + 1} cold check: ${sample.ms.toFixed(1)} ms at the client, ${sample.worker.toFixed(1)} ms in the Worker, ${sample.atD1.toFixed(1)} ms at D1's latency ` +
            `(D1 in flight ${sample.d1Wait.toFixed(1)} ms, local D1 beyond the simulated latency ${sample.localD1.toFixed(1)} ms):\n${tripLines(sample.trips)}`,
        );
        continue;
      }
      (loaded === undefined ? samples.loading : samples.warm).push(sample);
      if (i % 4 === 0) samples.ping.push((await timed(`${dev.url}/healthz`)).sample);
    }
    const stats = (await (await fetch(`${dev.url}/__edge/stats`)).json()) as { rows: number };
    // the writes the replica has not replayed yet: replayed before the process ends (they live in the isolate)
    await fetch(`${dev.url}/__edge/flush`);
    backgroundRows.push(stats.rows);
    loadSeconds.push(loaded ?? Number.NaN);
    log(
      `isolate ${isolate + 1}: started in ${startSeconds.at(-1)!.toFixed(1)} s, cold ${samples.cold.at(-1)!.ms.toFixed(1)} ms ` +
        `(${samples.cold.at(-1)!.rows} rows), loaded after ${loaded?.toFixed(2) ?? "-"} s, isolate rows read ${stats.rows}`,
    );
  } finally {
    await dev.close();
  }
}

// 3. report
const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
const fmt = (n: number, digits = 1) => (Number.isNaN(n) ? "-" : n.toFixed(digits));
console.log(
  `\nbench-edge: ids ${IDS} (${IDS * 8} rows), replica ${values["replica-ms"]} ms, primary ${values["primary-ms"]} ms, lag ${LAG_MIN}-${LAG_MAX} ms, ${ISOLATES} isolates x ${REQUESTS} requests${SECONDS > 0 ? ` or ${SECONDS} s` : ""}`,
);
console.log(
  "| request | n | client p50 / p99 ms | Worker p50 / p99 ms | Worker at D1's latency p50 / p99 ms | Worker, D1 in flight p50 ms | local D1 overhead p50 ms | D1 trips p50/max | primary trips p50/max | rows read p50/max |",
);
console.log("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |");
for (const [kind, xs] of Object.entries(samples)) {
  const of = (f: (s: Sample) => number) => xs.map(f);
  const pair = (v: number[], digits = 1) => `${fmt(pct(v, 50), digits)} / ${fmt(pct(v, 99), digits)}`;
  const range = (v: number[]) => `${fmt(pct(v, 50), 0)}/${fmt(pct(v, 100), 0)}`;
  console.log(
    `| ${kind} | ${xs.length} | ${pair(of((s) => s.ms))} | ${kind === "ping" ? "-" : pair(of((s) => s.worker))} | ` +
      `${kind === "ping" ? "-" : pair(of((s) => s.atD1))} | ` +
      `${fmt(
        pct(
          of((s) => s.d1Wait),
          50,
        ),
      )} | ${fmt(
        pct(
          of((s) => s.localD1),
          50,
        ),
      )} | ${range(of((s) => s.d1))} | ` +
      `${range(of((s) => s.primary))} | ${range(of((s) => s.rows))} |`,
  );
}
// the freshness look (head, horizon, tenant, head schema in one statement) and the catch-up it may start (the feed)
const freshnessLook = (sql: string) =>
  /\[pemba_meta,tenants,schemas\]$|^SELECT tx FROM|^SELECT 't' AS kind/.test(sql);
const warmOutside = samples.warm.filter((s) => s.trips.some((t) => !t.sql.every(freshnessLook)));
console.log(
  `warm checks with a D1 read other than the freshness look: ${warmOutside.length} of ${samples.warm.length}` +
    (warmOutside.length > 0 ? ` (first:\n${tripLines(warmOutside[0]!.trips)})` : ""),
);
console.log(
  `seconds from spawning wrangler dev until /healthz answered: ${startSeconds.map((s) => fmt(s, 1)).join(", ")}`,
);
console.log(
  `fresh-token reads that did not see their write: ${stale} of ${samples.fresh.length + samples["fresh-loading"].length}`,
);
console.log(
  `seconds until an isolate's background work ended: ${loadSeconds.map((s) => fmt(s, 2)).join(", ")}`,
);
console.log(`rows read per isolate (all D1 reads, background loads included): ${backgroundRows.join(", ")}`);
