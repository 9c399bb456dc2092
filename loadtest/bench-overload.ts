/**
 * Overload: `pemba serve` as a child process, checks sent at a fixed arrival rate (open model: a request is sent
 * on schedule whether or not the earlier ones were answered). First the highest rate of the steps whose p99 stays
 * at most 10 ms (the sustainable rate); then `--factor` (3) x that rate for `--seconds`, while /healthz is asked every 100 ms;
 * then half the sustainable rate, until a second passes with nothing shed and p99 at most 10 ms again. Prints the
 * answers by status, the p99 of the answered checks, /healthz's slowest answer, the server's largest RSS and the
 * seconds to recover.
 *
 *   node --experimental-strip-types loadtest/bench-overload.ts [--seconds 15] [--factor 3] [--steps 100,200,...]
 */
import { Agent, request } from "node:http";
import { parseArgs } from "node:util";
import { rssMegabytes } from "./lib/proc.ts";
import { startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "15" },
    /** the overload as a multiple of the sustainable rate */
    factor: { type: "string", default: "3" },
    /** skip the search: the sustainable rate of an earlier run */
    sustainable: { type: "string" },
    steps: { type: "string", default: "100,200,400,800,1200,1600,2400,3200" },
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
