/**
 * A/B of two source trees' `pemba serve` on the memory store in one session: both seeded, then fixed-rate windows
 * alternating A, B, A, B ... (so background load hits both alike), CPU per answered request and RSS for each window.
 *   node --experimental-strip-types loadtest/ab-http.ts <repoA> <repoB> [--rate 2000] [--duration 20] [--rounds 3]
 *        [--bare] [--no-seed]   (also alternate the bare node:http server; skip the seed data)
 * A repo may be given as <dir>:<log level> or <dir>:<log level>:<node flag>,<node flag> (e.g.
 * `.:info:--max-semi-space-size=2` to compare V8 settings on one tree).
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "@pemba/core/testing/node";
import { metric, runK6 } from "./lib/k6.ts";
import { cpuSeconds, rssMegabytes } from "./lib/proc.ts";
import { seed, spotCheck, TENANT_ID, writeSeedSchema } from "./lib/seed.ts";
import { type ServerProcess, startBareServer } from "./lib/servers.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rate: { type: "string", default: "2000" },
    duration: { type: "string", default: "20" },
    rounds: { type: "string", default: "3" },
    bare: { type: "boolean" },
    "no-seed": { type: "boolean" },
    "log-level": { type: "string", default: "info" },
  },
});
const RATE = Number(values.rate);
const DURATION = Number(values.duration);

async function startFrom(spec: string): Promise<ServerProcess> {
  const [repo, level = values["log-level"]!, flags = ""] = spec.split(":");
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      "--experimental-strip-types",
      "--no-warnings",
      ...flags.split(",").filter((f) => f !== ""),
      "packages/node-server/src/cli.ts",
      "serve",
      "--database",
      "memory:",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--log-level",
      level!,
    ],
    // no gRPC port (a variable: a checkout from before the gRPC port ignores it)
    {
      cwd: resolve(repo!),
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, PEMBA_GRPC_PORT: "0" },
    },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      await (await fetch(`${url}/metrics`)).arrayBuffer();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    pid: child.pid!,
    stop: () =>
      new Promise((done) => {
        child.once("exit", (code) => done(code ?? 1));
        child.kill("SIGTERM");
      }),
  };
}

async function window(server: ServerProcess, version: string, seconds: number) {
  const before = cpuSeconds(server.pid);
  const run = await runK6("check-open-model.js", {
    PEMBA_URL: server.url,
    TENANT_ID,
    SCHEMA_VERSION: version,
    RATE,
    DURATION: `${seconds}s`,
  });
  const cpu = cpuSeconds(server.pid) - before;
  const answered = metric(run.summary, "http_reqs", "count");
  return {
    us: (1e6 * cpu) / Math.max(1, answered),
    answered,
    p99: metric(run.summary, "http_req_duration", "p(99)"),
    failed: metric(run.summary, "checks", "fails"),
    rss: rssMegabytes(server.pid),
  };
}

const servers: { name: string; server: ServerProcess; version: string }[] = [];
for (const [i, repo] of positionals.entries()) {
  const server = await startFrom(repo);
  const version = await writeSeedSchema(server.url);
  const name = "ABCD"[i]!;
  if (values["no-seed"]) console.log(`${name} ${repo}: not seeded`);
  else {
    const seeded = await seed(server.url, version, () => {});
    console.log(
      `${name} ${repo}: seeded in ${seeded.seconds.toFixed(1)} s; spot checks ${await spotCheck(server.url, version)}`,
    );
  }
  servers.push({ name, server, version });
}
if (values.bare) servers.push({ name: "bare", server: await startBareServer(), version: "" });
const results = new Map<string, number[]>();
try {
  for (const s of servers) await window(s.server, s.version, 5); // warm-up
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const s of servers) {
      const r = await window(s.server, s.version, DURATION);
      console.log(
        `round ${round + 1} ${s.name}: ${r.us.toFixed(1)} us/request (${r.answered} answered, ${r.failed} failed, p99 ${r.p99.toFixed(2)} ms, RSS ${r.rss.toFixed(0)} MB)`,
      );
      results.set(s.name, [...(results.get(s.name) ?? []), r.us]);
    }
  }
} finally {
  for (const s of servers) await s.server.stop();
}
for (const [name, us] of results) {
  const sorted = [...us].sort((a, b) => a - b);
  console.log(
    `${name}: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} us (${us.map((u) => u.toFixed(1)).join(", ")})`,
  );
}
