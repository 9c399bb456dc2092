/**
 * A/B of the check over gRPC against the check over HTTP on ONE `pemba serve` (memory store, seeded with Permify's
 * seed writer): fixed-rate windows alternating HTTP, gRPC, gRPC, HTTP, ... (so background load hits both alike),
 * k6's check-open-model.js against k6/net/grpc's check-open-model-grpc.js, the same request mix. Prints the server's
 * CPU per answered check of each window and the ratio gRPC / HTTP over all windows.
 *   node --experimental-strip-types loadtest/ab-grpc.ts [--rate 150] [--duration 15] [--rounds 3] [--ids 10000]
 *        [--bare]   (the transports alone instead of pemba: grpc-bare-server.ts answers a fixed decision)
 *        [--bare-variant end|tuned|first-data|no-trailers]   (how the bare HTTP/2 side answers: grpc-bare-server.ts)
 *        [--warmup 5]   (seconds of each protocol's load before the measured windows, and an idle window after)
 *        [--protocols http,grpc]   (the windows of a round, in that order; one protocol alone for a profile)
 *        [--node-flags="<flags for the server's node>"]
 *        [--cpu-prof-dir <dir>]   (the server's V8 CPU profile: read it with profile-summary.ts, skipping the seeding)
 *        [--perf-dir <dir>]   (`perf record` of the server over each window: who spends its user CPU per check,
 *                              lib/perf-owners.ts; the server runs with --perf-basic-prof)
 *        [--heap-sample-dir <dir>]   (V8's sampling heap profile of the server over each window, collected objects
 *                                     included, and its GC pauses: lib/heap-sample.mjs; read with heap-summary.ts)
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "@pemba/core/testing/node";
import { metric, runK6 } from "./lib/k6.ts";
import { perfOwners, perfRecord } from "./lib/perf-owners.ts";
import { cpuSplit } from "./lib/proc.ts";
import { seed, spotCheck, writeSeedSchema } from "./lib/seed.ts";
import { startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "150" },
    duration: { type: "string", default: "15" },
    rounds: { type: "string", default: "3" },
    ids: { type: "string", default: "10000" },
    bare: { type: "boolean", default: false },
    "bare-variant": { type: "string", default: "end" },
    protocols: { type: "string", default: "http,grpc" },
    warmup: { type: "string", default: "5" },
    "cpu-prof-dir": { type: "string" },
    "perf-dir": { type: "string" },
    "node-flags": { type: "string", default: "" },
    "heap-sample-dir": { type: "string" },
  },
});
const RATE = Number(values.rate);
const DURATION = Number(values.duration);
const ROUNDS = Number(values.rounds);
const IDS = Number(values.ids);
const WARMUP = Number(values.warmup);
const PROTOCOLS = values.protocols.split(",") as Protocol[];
if (PROTOCOLS.some((p) => p !== "http" && p !== "grpc")) throw new Error("--protocols: http, grpc or both");
/** The server's node flags: the profile's, and any given (e.g. --perf-basic-prof for perf record). */
const PROFILE_FLAGS = [
  ...(values["cpu-prof-dir"] ? ["--cpu-prof", `--cpu-prof-dir=${values["cpu-prof-dir"]}`] : []),
  ...(values["perf-dir"] ? ["--perf-basic-prof"] : []),
  ...values["node-flags"].split(" ").filter((f) => f !== ""),
];
const HEAP_SAMPLE_DIR = values["heap-sample-dir"];
if (HEAP_SAMPLE_DIR !== undefined) {
  mkdirSync(HEAP_SAMPLE_DIR, { recursive: true });
  // the server inherits the variable; its preload toggles the sampling on each SIGUSR2
  process.env.HEAP_SAMPLE_DIR = HEAP_SAMPLE_DIR;
  PROFILE_FLAGS.push(`--import=${join(import.meta.dirname, "lib", "heap-sample.mjs")}`);
}
const PERF_DIR = values["perf-dir"];
if (PERF_DIR !== undefined) mkdirSync(PERF_DIR, { recursive: true });
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

type Protocol = "http" | "grpc";
interface Window {
  protocol: Protocol;
  answered: number;
  failed: number;
  dropped: number;
  cpu: number;
  /** Of `cpu`, in the kernel (system time). */
  system: number;
  /** What the server spends with no load over the window's duration. */
  idle: number;
  p50: number;
  p99: number;
  /** The window's perf.data (--perf-dir). */
  perfData?: string;
}

/** The bare transports (grpc-bare-server.ts) on two free ports, as a server of the A/B. */
async function startBare(grpcPort: number): Promise<{ url: string; pid: number; stop(): Promise<unknown> }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      "--experimental-strip-types",
      "--no-warnings",
      ...PROFILE_FLAGS,
      join(import.meta.dirname, "grpc-bare-server.ts"),
      String(port),
      String(grpcPort),
      values["bare-variant"],
    ],
    { stdio: "inherit" },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await (await fetch(url, { method: "POST", body: "{}" })).arrayBuffer();
      break;
    } catch (e) {
      if (i === 100) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    pid: child.pid!,
    stop: () => {
      child.kill();
      return new Promise((r) => child.once("exit", r));
    },
  };
}

const token = randomBytes(16).toString("hex");
const grpcPort = await freePort();
const server = values.bare
  ? await startBare(grpcPort)
  : await startPemba("memory:", ["--auth-keys", token, "--grpc-port", String(grpcPort)], PROFILE_FLAGS);
const windows: Window[] = [];
/** The server's CPU seconds per second with no load (timers, metrics), measured over one window before the rounds. */
let idlePerSecond = 0;
try {
  let version = "";
  if (!values.bare) {
    version = await writeSeedSchema(server.url, token);
    log(`seeding ${IDS} ids per type ...`);
    const seeded = await seed(server.url, version, log, { token, totalIds: IDS });
    log(
      `seeded ${seeded.tuples + seeded.attributes} rows; spot checks ${await spotCheck(server.url, version, token, IDS)}`,
    );
  }
  log(`server pid ${server.pid}`);
  const env = {
    PEMBA_URL: server.url,
    PEMBA_GRPC: `127.0.0.1:${grpcPort}`,
    PEMBA_TOKEN: token,
    SCHEMA_VERSION: version,
    TOTAL_IDS: IDS,
    RATE,
    DURATION: `${DURATION}s`,
  };
  // unmeasured: JIT compilation and the first reads of both paths
  for (const protocol of PROTOCOLS) {
    if (WARMUP > 0)
      await runK6(protocol === "http" ? "check-open-model.js" : "check-open-model-grpc.js", {
        ...env,
        DURATION: `${WARMUP}s`,
      });
  }
  {
    const before = cpuSplit(server.pid);
    const started = performance.now();
    await new Promise((r) => setTimeout(r, DURATION * 1000));
    const after = cpuSplit(server.pid);
    const seconds = (performance.now() - started) / 1000;
    idlePerSecond = (after.user - before.user + after.system - before.system) / seconds;
    log(`idle: server CPU ${(idlePerSecond * 1e3).toFixed(2)} ms per second`);
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? PROTOCOLS : [...PROTOCOLS].reverse();
    for (const protocol of order) {
      const script = protocol === "http" ? "check-open-model.js" : "check-open-model-grpc.js";
      const perfData =
        PERF_DIR === undefined ? undefined : join(PERF_DIR, `round${round + 1}-${protocol}.data`);
      const stopPerf = perfData === undefined ? undefined : perfRecord(server.pid, perfData);
      if (HEAP_SAMPLE_DIR !== undefined) process.kill(server.pid, "SIGUSR2");
      const before = cpuSplit(server.pid);
      const started = performance.now();
      const run = await runK6(script, env);
      const after = cpuSplit(server.pid);
      await stopPerf?.();
      if (HEAP_SAMPLE_DIR !== undefined) {
        process.kill(server.pid, "SIGUSR2");
        // the server writes the window's profile before the next window (or its stop) begins
        await new Promise((r) => setTimeout(r, 1000));
        log(`heap sample window ${windows.length + 1}: ${protocol}`);
      }
      const seconds = (performance.now() - started) / 1000;
      const system = after.system - before.system;
      const cpu = after.user - before.user + system;
      const s = run.summary;
      const duration = protocol === "http" ? "http_req_duration" : "grpc_req_duration";
      const w: Window = {
        protocol,
        // one request per iteration (k6 counts no grpc_reqs)
        answered: metric(s, "iterations", "count"),
        failed: metric(s, "checks", "fails"),
        dropped: metric(s, "dropped_iterations", "count"),
        cpu,
        system,
        idle: idlePerSecond * seconds,
        p50: metric(s, duration, "med"),
        p99: metric(s, duration, "p(99)"),
        perfData,
      };
      windows.push(w);
      log(
        `round ${round + 1} ${protocol.padEnd(4)}: ${w.answered} checks (${w.failed} failed checks, ${w.dropped} dropped), ` +
          `server CPU ${((w.cpu * 1e6) / Math.max(1, w.answered)).toFixed(1)} µs/check ` +
          `(kernel ${((w.system * 1e6) / Math.max(1, w.answered)).toFixed(1)}; ` +
          `above idle ${(((w.cpu - w.idle) * 1e6) / Math.max(1, w.answered)).toFixed(1)}), p50 ${w.p50.toFixed(2)} ms, p99 ${w.p99.toFixed(2)} ms`,
      );
    }
  }
} finally {
  await server.stop();
}

const perCheck = (protocol: Protocol) => {
  const of = windows.filter((w) => w.protocol === protocol);
  const answered = of.reduce((n, w) => n + w.answered, 0);
  const us = (seconds: number) => (seconds * 1e6) / Math.max(1, answered);
  return {
    answered,
    us: us(of.reduce((n, w) => n + w.cpu, 0)),
    kernel: us(of.reduce((n, w) => n + w.system, 0)),
    aboveIdle: us(of.reduce((n, w) => n + w.cpu - w.idle, 0)),
  };
};
const http = perCheck("http");
const grpc = perCheck("grpc");
const failed = windows.reduce((n, w) => n + w.failed, 0);
console.log(
  `\n${values.bare ? `bare transports (${values["bare-variant"]}): ` : ""}server CPU per check at ${RATE}/s, ${ROUNDS} rounds of ${DURATION} s windows: HTTP ${http.us.toFixed(1)} µs ` +
    `(kernel ${http.kernel.toFixed(1)}; ${http.answered} checks), gRPC ${grpc.us.toFixed(1)} µs ` +
    `(kernel ${grpc.kernel.toFixed(1)}; ${grpc.answered} checks); ` +
    `gRPC / HTTP = ${(grpc.us / http.us).toFixed(3)}; above the idle server's ${(idlePerSecond * 1e3).toFixed(2)} ms/s: ` +
    `HTTP ${http.aboveIdle.toFixed(1)} µs, gRPC ${grpc.aboveIdle.toFixed(1)} µs, ` +
    `gRPC / HTTP = ${(grpc.aboveIdle / http.aboveIdle).toFixed(3)}; failed checks ${failed}`,
);
if (PERF_DIR !== undefined) {
  // per protocol, over its windows: each owner's share of the samples times the user CPU per check
  for (const protocol of PROTOCOLS) {
    const of = windows.filter((w) => w.protocol === protocol);
    const answered = of.reduce((n, w) => n + w.answered, 0);
    const userUs = (of.reduce((n, w) => n + w.cpu - w.system, 0) * 1e6) / Math.max(1, answered);
    const owners = new Map<string, number>();
    let samples = 0;
    for (const w of of) {
      const r = perfOwners(w.perfData!);
      samples += r.samples;
      for (const [owner, n] of r.owners) owners.set(owner, (owners.get(owner) ?? 0) + n);
    }
    console.log(
      `\n${protocol}: user CPU ${userUs.toFixed(1)} µs/check, ${samples} perf samples; by owner (µs/check):`,
    );
    for (const [owner, n] of [...owners].sort((a, b) => b[1] - a[1]))
      console.log(
        `  ${((n / samples) * userUs).toFixed(1).padStart(7)}  ${((100 * n) / samples).toFixed(1).padStart(5)}%  ${owner}`,
      );
  }
}
if (failed > 0) process.exitCode = 1;
