/**
 * What one hot check costs the Worker's isolate in memory: the shipped Worker (packages/worker/src/index.ts, the
 * repository's wrangler.toml, the local D1 in --state as bench-edge.ts seeded it) or, with --config, another
 * wrangler config (e.g. a bare Worker, the control), under `wrangler dev`. The check `content:1 view user:2` is
 * sent --requests times one at a time with node:http on one kept-alive socket, at the workerd socket that serves
 * the Worker (as bench-edge-proxy.ts finds it), after 500 to warm up. Over that window the isolate's V8 heap
 * profiler samples every allocation (DevTools protocol HeapProfiler.startSampling over wrangler dev's inspector):
 * prints the bytes allocated per check, the top allocating functions, and the isolate's heap before and after.
 * Allocations are what a Worker pays for in collections on the thread that answers; their count per check does
 * not depend on the machine's load, its latencies (also printed) do.
 *
 *   node --experimental-strip-types --no-warnings loadtest/profile-hot-check.ts --state <bench-edge state dir>
 *     [--requests 2000] [--top 20] [--config <wrangler.toml>]
 */

import http from "node:http";
import { parseArgs } from "node:util";
import { startWranglerDev } from "@pemba/worker/testing";
import { inspect } from "./lib/devtools.ts";
import { directUrl, HOT_CHECK, timedPosts } from "./lib/workerd-sockets.ts";

const { values } = parseArgs({
  options: {
    state: { type: "string" },
    requests: { type: "string", default: "2000" },
    top: { type: "string", default: "20" },
    config: { type: "string" },
  },
});
if (values.state === undefined && values.config === undefined) {
  console.error("--state <dir>: a bench-edge.ts state folder (seeded local D1), or --config <wrangler.toml>");
  process.exit(2);
}
const N = Number(values.requests);
const { PATH, BODY } = HOT_CHECK;
const post = { "content-type": "application/json" };

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

function allocations(head: SamplingNode, top: number): string {
  const self = new Map<string, number>();
  let total = 0;
  const walk = (node: SamplingNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const name = `${functionName || "(anonymous)"} ${url.replace(/^.*\//, "") || "(native)"}:${lineNumber + 1}`;
    total += node.selfSize;
    if (node.selfSize > 0) self.set(name, (self.get(name) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(head);
  const rows = [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, bytes]) => `  ${(bytes / N).toFixed(0).padStart(7)} B/check  ${name}`);
  return [`allocated ${(total / N).toFixed(0)} bytes per check (sampled), top functions:`, ...rows].join(
    "\n",
  );
}

const pct = (times: number[], p: number) =>
  [...times].sort((a, b) => a - b)[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(2);
const mb = (usage: { usedSize: number }) => `${(usage.usedSize / 1048576).toFixed(1)} MB`;

const dev = await startWranglerDev({}, 180_000, values.state, "warn", values.config);
try {
  const first = await fetch(dev.url + PATH, { method: "POST", headers: post, body: BODY });
  const expected = await first.text();
  if (!first.ok) throw new Error(`${first.status} ${expected}`);
  const direct = await directUrl(dev, PATH, BODY, expected);
  if (direct === undefined) throw new Error("no workerd socket answered like wrangler dev's port");
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  await timedPosts(direct, agent, PATH, BODY, 500);
  const session = await inspect(dev.inspectorPort);
  const before = await session.send<{ usedSize: number }>("Runtime.getHeapUsage");
  await session.send("HeapProfiler.enable");
  await session.send("HeapProfiler.startSampling", {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  const times = await timedPosts(direct, agent, PATH, BODY, N);
  const { profile } = await session.send<{ profile: { head: SamplingNode } }>("HeapProfiler.stopSampling");
  const after = await session.send<{ usedSize: number }>("Runtime.getHeapUsage");
  session.close();
  agent.destroy();
  console.log(
    `${N} hot checks: p50 ${pct(times, 0.5)} p99 ${pct(times, 0.99)} ms (with the heap profiler on); isolate heap ${mb(before)} before, ${mb(after)} after`,
  );
  console.log(allocations(profile.head, Number(values.top)));
} finally {
  await dev.close();
}
