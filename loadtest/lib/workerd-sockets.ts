/**
 * The sockets of the workerd processes under a `wrangler dev`: the one that serves the Worker itself (behind
 * miniflare's entry Worker, in front of nothing else), as benchmarks that leave wrangler's proxy out send to it.
 */
import { execFileSync } from "node:child_process";
import http from "node:http";
import type { WranglerDev } from "@pemba/worker/testing";

/** Ports the workerd processes under this `wrangler dev` listen on (its descendants), other than its own port. */
export function workerdPorts(dev: WranglerDev): number[] {
  const pids: string[] = [];
  let frontier = [String(dev.child.pid)];
  while (frontier.length > 0) {
    let children = "";
    try {
      children = execFileSync("pgrep", ["-P", frontier.join(",")]).toString();
    } catch {
      // none
    }
    frontier = children.split(/\s+/).filter(Boolean);
    pids.push(...frontier);
  }
  const own = Number(new URL(dev.url).port);
  return execFileSync("ss", ["-ltnpH"])
    .toString()
    .split("\n")
    .filter((l) => l.includes('"workerd"') && pids.some((p) => l.includes(`pid=${p},`)))
    .map((l) => Number(/127\.0\.0\.1:(\d+)/.exec(l)?.[1]))
    .filter((p) => p > 0 && p !== own);
}

/**
 * The workerd socket that serves the Worker itself: the one that answers a POST of `body` to `path` with `expected`,
 * as wrangler dev's own port does.
 */
export async function directUrl(
  dev: WranglerDev,
  path: string,
  body: string,
  expected: string,
): Promise<string | undefined> {
  for (const port of workerdPorts(dev)) {
    const url = `http://127.0.0.1:${port}`;
    try {
      const r = await fetch(url + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(2000),
      });
      if ((await r.text()) === expected) return url;
    } catch {
      // not an HTTP socket of the Worker
    }
  }
  return undefined;
}

/** `n` POSTs of `body` to `path`, one at a time on `agent` (kept alive, Nagle off): each one's time in ms. */
export async function timedPosts(
  base: string,
  agent: http.Agent,
  path: string,
  body: string,
  n: number,
): Promise<number[]> {
  const u = new URL(base);
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await new Promise<void>((done, fail) => {
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          path,
          method: "POST",
          agent,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on("end", () => done());
        },
      );
      req.on("error", fail);
      req.setNoDelay(true);
      req.end(body);
    });
    times.push(performance.now() - started);
  }
  return times;
}

/** The hot check bench-edge's state answers from the working set after its first read: content:1 view user:2. */
export const HOT_CHECK = {
  PATH: "/v1/tenants/t1/permissions/check",
  BODY: JSON.stringify({
    metadata: { schema_version: "", depth: 20 },
    entity: { type: "content", id: "1" },
    permission: "view",
    subject: { type: "user", id: "2" },
  }),
};
