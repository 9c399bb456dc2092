/**
 * Where a hot check's time goes at the client under `wrangler dev`: the same request, one at a time, to
 *
 * - the shipped Worker (packages/worker/src/index.ts with the repository's wrangler.toml, local D1 in --state as
 *   bench-edge.ts seeded it) and, as the control, a bare Worker that answers a fixed JSON body (no Pemba at all) under
 *   the same `wrangler dev`;
 * - through wrangler dev's own port (its proxy, as bench-edge.ts and users reach it) and directly at the workerd
 *   socket that serves the Worker (the `wrangler dev` process's workerd child; found by its answer to /healthz);
 * - with the bench's client (Node's fetch, keep-alive) and with node:http on one kept-alive socket, Nagle off.
 *
 * The check is `content:1 view user:2`, hot after the first request (no D1 statement: its request line says so
 * when the log is on). Prints p50 / p90 / p99 per way, per round.
 *
 *   node --experimental-strip-types loadtest/bench-edge-proxy.ts --state <bench-edge state dir> [--requests 300]
 *     [--rounds 2] [--vars NAME=value,...]
 *
 * The shipped Worker runs twice: as shipped (request log at its default, warn) and with the request log on
 * (PEMBA_LOG_LEVEL=info, wrangler's --log-level log), as bench-edge.ts runs it.
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startWranglerDev, type WranglerDev } from "@pemba/worker/testing";
import { directUrl, HOT_CHECK, timedPosts } from "./lib/workerd-sockets.ts";

const { values } = parseArgs({
  options: {
    state: { type: "string" },
    requests: { type: "string", default: "300" },
    rounds: { type: "string", default: "2" },
    vars: { type: "string", default: "" },
  },
});
if (values.state === undefined) {
  console.error("--state <dir>: a bench-edge.ts state folder (seeded local D1)");
  process.exit(2);
}
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);
const VARS = Object.fromEntries(
  values.vars
    .split(",")
    .filter((v) => v.includes("="))
    .map((v) => [v.slice(0, v.indexOf("=")), v.slice(v.indexOf("=") + 1)]),
);

const { PATH, BODY } = HOT_CHECK;

/** The control: a Worker that reads the body and answers a fixed check answer, nothing else. */
function bareWorker(): { config: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "pemba-bare-worker-"));
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "index.js"),
    `export default {
  async fetch(request) {
    if (request.method === "POST") await request.text();
    return new Response('{"can":"CHECK_RESULT_ALLOWED","metadata":{"check_count":1}}', {
      headers: { "content-type": "application/json" },
    });
  },
};
`,
  );
  writeFileSync(
    join(dir, "wrangler.toml"),
    `name = "bare"\nmain = "index.js"\ncompatibility_date = "2026-07-01"\n`,
  );
  return { config: join(dir, "wrangler.toml"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

async function viaFetch(base: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const started = performance.now();
    const r = await fetch(base + PATH, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: BODY,
    });
    await r.text();
    times.push(performance.now() - started);
  }
  return times;
}

const pct = (times: number[], p: number) => {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(2);
};
const line = (name: string, times: number[]) =>
  console.log(
    `${name.padEnd(58)} p50 ${pct(times, 0.5)}  p90 ${pct(times, 0.9)}  p99 ${pct(times, 0.99)} ms`,
  );

async function measure(label: string, dev: WranglerDev): Promise<void> {
  const first = await fetch(dev.url + PATH, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: BODY,
  });
  const expected = await first.text();
  if (!first.ok) throw new Error(`${label}: ${first.status} ${expected}`);
  const direct = await directUrl(dev, PATH, BODY, expected);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let round = 1; round <= ROUNDS; round++) {
    line(`${label}, wrangler dev's port, fetch (round ${round})`, await viaFetch(dev.url));
    line(
      `${label}, wrangler dev's port, node:http keep-alive (round ${round})`,
      await timedPosts(dev.url, agent, PATH, BODY, REQUESTS),
    );
    if (direct === undefined) continue;
    line(`${label}, workerd's socket, fetch (round ${round})`, await viaFetch(direct));
    line(
      `${label}, workerd's socket, node:http keep-alive (round ${round})`,
      await timedPosts(direct, agent, PATH, BODY, REQUESTS),
    );
  }
  if (direct === undefined) console.log(`${label}: no workerd socket answered like wrangler dev's port`);
  agent.destroy();
}

const bare = bareWorker();
try {
  const control = await startWranglerDev({}, 180_000, undefined, "warn", bare.config);
  try {
    await measure("bare Worker", control);
  } finally {
    await control.close();
  }
  // as shipped (request log: warn), then as bench-edge.ts runs it (a request line per request, shown by wrangler)
  for (const [vars, level, label] of [
    [VARS, "warn", "shipped Worker"],
    [{ ...VARS, PEMBA_LOG_LEVEL: "info" }, "log", "shipped Worker, request log on"],
  ] as const) {
    const shipped = await startWranglerDev(vars, 180_000, resolve(values.state), level);
    try {
      await measure(`${label}${values.vars ? ` (${values.vars})` : ""}`, shipped);
    } finally {
      await shipped.close();
    }
  }
} finally {
  bare.remove();
}
