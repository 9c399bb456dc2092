/**
 * The sockets of the workerd processes under a `wrangler dev`: the one that serves the Worker itself (behind
 * miniflare's entry Worker, in front of nothing else), as benchmarks that leave wrangler's proxy out send to it.
 */
import { execFileSync } from "node:child_process";
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
