/**
 * Does one tenant's schema write stall the others, and what does it leave in memory? `pemba serve`
 * runs as a child process; this process sends checks on one tenant (4 in flight, each answered before the next is
 * sent) for `--seconds`, first alone, then while another tenant writes schemas back to back from a worker thread
 * (its uploads do not delay this thread's timing): every write a new,
 * distinct schema at the limits (64 KiB of entities, or 8 KiB of CEL rules plus entities up to 64 KiB), and the
 * issue's oversize probes (refused). Prints the checks' p50/p99/max, the writes' answers and times, and the
 * server's RSS.
 *
 *   node --experimental-strip-types loadtest/bench-schema-stall.ts [--seconds 10] [--database memory:]
 *     [--serve-args="--max-compiled-schema-mb 16"] [--only MiB] [--repo <checkout>]
 *
 * `--repo`: the checkout whose `pemba` CLI runs (another worktree for before/after runs; its CLI is built there).
 */
import { request } from "node:http";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { MAX_SCHEMA_BYTES, MAX_SCHEMA_RULE_CHARS } from "@pemba/core";
import { celHeavySchema, entitiesSchema, letterName } from "@pemba/core/testing";
import { checkTimes, latencySummary, percentile } from "./lib/latency.ts";
import { rssMegabytes } from "./lib/proc.ts";
import { startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    database: { type: "string", default: "memory:" },
    /** more `pemba serve` flags, space separated, e.g. "--max-compiled-schema-mb 16" */
    "serve-args": { type: "string", default: "" },
    /** only the probes whose label contains this text, e.g. "MiB" for the oversize ones */
    only: { type: "string", default: "" },
    /** the checkout whose CLI serves (default: this one) */
    repo: { type: "string" },
    /** an already running server (its pid for RSS) instead of starting one */
    url: { type: "string" },
    pid: { type: "string" },
  },
});
const SECONDS = Number(values.seconds);
const IN_FLIGHT = 4;

type Probe = [string, (salt: number) => string];
const ALL_PROBES: Probe[] = [
  ["64 KiB of entities", (salt) => entitiesSchema(salt)],
  [
    `${MAX_SCHEMA_RULE_CHARS / 1024} KiB of CEL + entities to 64 KiB`,
    (salt) => celHeavySchema(salt, MAX_SCHEMA_BYTES),
  ],
  [
    "3.4 MiB rule: 400,000-term && chain",
    (salt) =>
      `entity user {}\nentity doc {\n attribute x integer\n}\nrule r_${letterName(salt)}(x integer) {\n ${"x > 1 && ".repeat(399_999)}x > 1\n}`,
  ],
  [
    "2.9 MiB: 80,000 entities",
    (salt) =>
      Array.from(
        { length: 80_000 },
        (_, i) => `entity e_${letterName(salt)}_${letterName(i)} {\n relation r @user\n}`,
      ).join("\n"),
  ],
  [
    "0.6 MiB: 300,000 nested parentheses",
    (salt) =>
      `entity user {}\nentity d_${letterName(salt)} {\n relation a @user\n permission p = ${"(".repeat(300_000)}a${")".repeat(300_000)}\n}`,
  ],
];
const probes = ALL_PROBES.filter(([label]) => label.includes(values.only!));
/** The refused probes are the same text each time (refused before parsing, no cache to defeat); built once. */
const built = new Map<string, string>();
const bodyOf = (label: string, make: (salt: number) => string, salt: number) => {
  if (label.includes(" MiB")) {
    if (!built.has(label)) built.set(label, JSON.stringify({ schema: make(salt) }));
    return built.get(label)!;
  }
  return JSON.stringify({ schema: make(salt) });
};
for (const [label, make] of isMainThread ? probes : [])
  console.log(
    `${label}: ${(Buffer.byteLength(make(1)) / 1024).toFixed(1)} KiB, request ${(bodyOf(label, make, 1).length / 1024).toFixed(1)} KiB`,
  );

const server = !isMainThread
  ? {
      url: (workerData as { url: string }).url,
      pid: (workerData as { pid: number }).pid,
      stop: async () => 0,
    }
  : values.url === undefined
    ? await startPemba(
        values.database!,
        values["serve-args"]!.split(" ").filter(Boolean),
        [],
        values.repo === undefined ? undefined : resolve(values.repo),
      )
    : { url: values.url, pid: Number(values.pid), stop: async () => 0 };
const post = async (path: string, body: unknown) => {
  const r = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

if (isMainThread) {
  for (const id of ["other", "writer"]) await post("/v1/tenants/create", { id, name: id });
  await post("/v1/tenants/other/schemas/write", {
    schema: "entity user {}\nentity doc {\n relation owner @user\n permission view = owner\n}",
  });
  await post("/v1/tenants/other/data/write", {
    metadata: { schema_version: "" },
    tuples: [{ entity: { type: "doc", id: "1" }, relation: "owner", subject: { type: "user", id: "1" } }],
  });
}
const check = {
  metadata: { schema_version: "", snap_token: "", depth: 20 },
  entity: { type: "doc", id: "1" },
  permission: "view",
  subject: { type: "user", id: "1" },
};

/**
 * A write on a connection of its own (node:http, no keep-alive): a request refused before its body is read closes
 * its connection, which must not be one the checks' pool reuses.
 */
function postAlone(path: string, body: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      { method: "POST", agent: false, headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          text += d.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const checks = (seconds: number) =>
  checkTimes(post, "/v1/tenants/other/permissions/check", check, IN_FLIGHT, seconds);

type WriteStats = [string, { times: number[]; answers: string[] }][];

/** The writer thread: writes back to back until told to stop (its own event loop: the checks' timing is not its). */
async function writeUntilStopped(): Promise<{ writes: WriteStats; rssMax: number }> {
  let writing = true;
  parentPort!.once("message", () => {
    writing = false;
  });
  const writes = new Map<string, { times: number[]; answers: Set<string> }>();
  let salt = 100;
  let rssMax = 0;
  while (writing) {
    for (const [label, make] of probes) {
      const body = bodyOf(label, make, salt++);
      const started = performance.now();
      let answer: string;
      try {
        const r = await postAlone("/v1/tenants/writer/schemas/write", body);
        answer = r.status === 200 ? "200" : `${r.status} ${String(r.body.message).slice(0, 90)}`;
      } catch (e) {
        answer = `no answer: ${String((e as Error).cause ?? e)}`;
      }
      const entry = writes.get(label) ?? { times: [], answers: new Set() };
      entry.times.push(performance.now() - started);
      entry.answers.add(answer);
      writes.set(label, entry);
      rssMax = Math.max(rssMax, rssMegabytes(server.pid));
    }
  }
  return {
    writes: [...writes].map(([label, e]) => [label, { times: e.times, answers: [...e.answers] }]),
    rssMax,
  };
}

if (!isMainThread) {
  parentPort!.postMessage(await writeUntilStopped());
} else {
  console.log(`server RSS at start: ${rssMegabytes(server.pid).toFixed(0)} MB`);
  await checks(2); // warm-up
  console.log(`checks alone:             ${latencySummary(await checks(SECONDS))}`);
  const writer = new Worker(new URL(import.meta.url), {
    workerData: { url: server.url, pid: server.pid },
    argv: process.argv.slice(2),
  });
  const result = new Promise<{ writes: WriteStats; rssMax: number }>((resolve, reject) => {
    writer.once("message", resolve);
    writer.once("error", reject);
  });
  const during = await checks(SECONDS);
  writer.postMessage("stop");
  const { writes, rssMax } = await result;
  await writer.terminate();
  console.log(`checks during the writes: ${latencySummary(during)}`);
  for (const [label, { times, answers }] of writes) {
    const sorted = times.sort((a, b) => a - b);
    console.log(
      `  write ${label}: ${sorted.length} writes, p50 ${percentile(sorted, 0.5).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms (round trip, incl. upload); ${[...answers].join(" | ")}`,
    );
  }
  console.log(
    `server RSS: max ${rssMax.toFixed(0)} MB during the writes, ${rssMegabytes(server.pid).toFixed(0)} MB after`,
  );
  await server.stop();
}
