/**
 * Do the heaviest requests one tenant may send stall the others? `pemba serve --schema-writes safe` runs as a child
 * process; this process sends checks on tenant `other` (4 in flight, each answered before the next is sent) while,
 * in turn, another tenant sends back to back the worst admitted:
 *
 * - `diff`: `schemas/diff` of a 64 KiB schema that drops a relation from every one of ~980 entity types and changes
 *   each type's permission, over 200,000 stored tuples (the work budget: one pass over the rows, 50,000 pairs);
 * - `safe write`: `schemas/write` of that schema (refused: it would orphan the rows, after the same count);
 * - `explain`: `permissions/explain` of a denied check over 50,000 usersets (the proof: 1,000 nodes, 512 KiB).
 *
 * Rounds alternate: checks alone, then with each probe, `--rounds` times; prints each phase's p50/p99/max of the
 * checks and the probes' answers and times.
 *
 *   node --experimental-strip-types loadtest/bench-diff-stall.ts [--seconds 8] [--rounds 2] [--database memory:]
 */
import { parseArgs } from "node:util";
import { MAX_SCHEMA_BYTES } from "@pemba/core";
import { checkTimes, latencySummary, percentile } from "./lib/latency.ts";
import { rssMegabytes } from "./lib/proc.ts";
import { startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "8" },
    rounds: { type: "string", default: "2" },
    database: { type: "string", default: "memory:" },
    "serve-args": { type: "string", default: "" },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const IN_FLIGHT = 4;
const TUPLES = 200_000;
const USERSETS = 50_000;

const letters = (i: number) =>
  String.fromCharCode(97 + (i % 26)) +
  String.fromCharCode(97 + (Math.floor(i / 26) % 26)) +
  String.fromCharCode(97 + Math.floor(i / 676));
const entityOld = (i: number) =>
  `entity x${letters(i)} {relation o @user relation e @user permission p = o or e}`;
const entityNew = (i: number) => `entity x${letters(i)} {relation o @user permission p = o}`;
// as many types as fit the schema size limit
let TYPES = 0;
{
  let bytes = "entity user {}\n".length;
  while (bytes + entityOld(TYPES).length + 1 <= MAX_SCHEMA_BYTES) bytes += entityOld(TYPES++).length + 1;
}
const OLD = `entity user {}\n${Array.from({ length: TYPES }, (_, i) => entityOld(i)).join("\n")}`;
const NEW = `entity user {}\n${Array.from({ length: TYPES }, (_, i) => entityNew(i)).join("\n")}`;

const server = await startPemba(values.database!, [
  "--schema-writes",
  "safe",
  ...values["serve-args"]!.split(" ").filter(Boolean),
]);
const post = async (path: string, body: unknown) => {
  const r = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, bytes: text.length, body: JSON.parse(text) as Record<string, unknown> };
};
const ok = <R extends { status: number; body: unknown }>(r: R): R => {
  if (r.status !== 200) throw new Error(JSON.stringify(r.body).slice(0, 300));
  return r;
};

console.log(
  `setup: ${TYPES} entity types (${(OLD.length / 1024).toFixed(1)} KiB; the diff's schema ${(NEW.length / 1024).toFixed(1)} KiB), ${TUPLES} tuples, ${USERSETS} usersets`,
);
for (const id of ["other", "big", "wide"]) ok(await post("/v1/tenants/create", { id, name: id }));
ok(
  await post("/v1/tenants/other/schemas/write", {
    schema: "entity user {}\nentity doc {\n relation owner @user\n permission view = owner\n}",
  }),
);
ok(
  await post("/v1/tenants/other/data/write", {
    metadata: {},
    tuples: [{ entity: { type: "doc", id: "1" }, relation: "owner", subject: { type: "user", id: "1" } }],
  }),
);
ok(await post("/v1/tenants/big/schemas/write", { schema: OLD }));
const perType = Math.ceil(TUPLES / TYPES);
let batch: unknown[] = [];
let written = 0;
for (let t = 0; t < TYPES && written < TUPLES; t++)
  for (let k = 0; k < perType && written < TUPLES; k++, written++) {
    batch.push({
      entity: { type: `x${letters(t)}`, id: `d${k % 20}` },
      relation: k % 2 === 0 ? "o" : "e",
      subject: { type: "user", id: `u${Math.floor(k / 2)}` },
    });
    if (batch.length === 1000) {
      ok(await post("/v1/tenants/big/data/write", { metadata: {}, tuples: batch }));
      batch = [];
    }
  }
if (batch.length > 0) ok(await post("/v1/tenants/big/data/write", { metadata: {}, tuples: batch }));
ok(
  await post("/v1/tenants/wide/schemas/write", {
    schema: "entity user {}\nentity group {\n relation member @user @group#member\n}",
  }),
);
for (let i = 0; i < USERSETS; i += 1000)
  ok(
    await post("/v1/tenants/wide/data/write", {
      metadata: {},
      tuples: Array.from({ length: 1000 }, (_, k) => ({
        entity: { type: "group", id: "root" },
        relation: "member",
        subject: { type: "group", id: `g${i + k}`, relation: "member" },
      })),
    }),
  );

const check = {
  metadata: { schema_version: "", snap_token: "", depth: 20 },
  entity: { type: "doc", id: "1" },
  permission: "view",
  subject: { type: "user", id: "1" },
};
const PROBES: [string, () => Promise<string>][] = [
  [
    "diff",
    async () => {
      const r = ok(await post("/v1/tenants/big/schemas/diff", { schema: NEW }));
      const b = r.body as {
        orphaned_rows: number;
        removed: unknown[];
        permissions: { checked: number }[];
        sample: { limited_by_budget: boolean };
      };
      const pairs = b.permissions.reduce((n, p) => n + p.checked, 0);
      return `200: ${b.removed.length} removals, ${b.orphaned_rows} orphaned rows, ${b.permissions.length} permissions, ${pairs} pairs${b.sample.limited_by_budget ? " (limited by budget)" : ""}`;
    },
  ],
  [
    "safe write",
    async () => {
      const r = await post("/v1/tenants/big/schemas/write", { schema: NEW });
      return `${r.status}: ${String(r.body.message).slice(0, 60)}...`;
    },
  ],
  [
    "explain",
    async () => {
      const r = ok(
        await post("/v1/tenants/wide/permissions/explain", {
          metadata: { depth: 20 },
          entity: { type: "group", id: "root" },
          permission: "member",
          subject: { type: "user", id: "zed" },
        }),
      );
      return `200: ${String(r.body.can)}, truncated ${String(r.body.truncated)}`;
    },
  ],
];

const checks = (seconds: number) =>
  checkTimes(post, "/v1/tenants/other/permissions/check", check, IN_FLIGHT, seconds);

/** The probe back to back until the checks' time is over; its times and answers. */
async function during(
  probe: () => Promise<string>,
): Promise<{ checks: number[]; times: number[]; answers: Set<string> }> {
  let running = true;
  const times: number[] = [];
  const answers = new Set<string>();
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      answers.add(await probe());
      times.push(performance.now() - started);
    }
  })();
  const sorted = await checks(SECONDS);
  running = false;
  await loop;
  return { checks: sorted, times: times.sort((a, b) => a - b), answers };
}

/**
 * The server's longest event-loop delay since the last call (prom-client's nodejs_eventloop_lag_max_seconds from
 * monitorEventLoopDelay, reset at every scrape), in ms: the longest stretch nothing else could run, CPU starvation
 * by other processes included.
 */
async function longestStall(): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const match = /^pemba_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
  return match === null ? Number.NaN : Number(match[1]) * 1000;
}

console.log(`server RSS after setup: ${rssMegabytes(server.pid).toFixed(0)} MB`);
await checks(2); // warm-up
for (let round = 1; round <= ROUNDS; round++) {
  for (const [label, probe] of PROBES) {
    await longestStall();
    const alone = await checks(SECONDS);
    console.log(
      `round ${round} checks alone:           ${latencySummary(alone)}; longest event-loop stall ${(await longestStall()).toFixed(1)} ms`,
    );
    const r = await during(probe);
    console.log(
      `round ${round} checks during ${label.padEnd(10)}: ${latencySummary(r.checks)}; longest event-loop stall ${(await longestStall()).toFixed(1)} ms`,
    );
    console.log(
      `  ${label}: ${r.times.length} requests, p50 ${percentile(r.times, 0.5).toFixed(0)} ms, max ${r.times.at(-1)!.toFixed(0)} ms; ${[...r.answers].join(" | ")}`,
    );
  }
}
console.log(`server RSS at the end: ${rssMegabytes(server.pid).toFixed(0)} MB`);
await server.stop();
