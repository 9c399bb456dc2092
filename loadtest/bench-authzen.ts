/**
 * AuthZEN against Permify's API on one `pemba serve` (the bundled CLI, memory store): the server's CPU per request
 * (user + system, from /proc) of
 *   1. a Permify-API check and an AuthZEN evaluation of the same question;
 *   2. a bulk check of 100 items and an AuthZEN evaluations batch of the same 100 questions.
 * Each window sends `--requests` requests (a tenth of that for the batches) over `--concurrency` keep-alive
 * connections; windows alternate A, B, B, A, ... so background load on the shared machine hits both alike. Both
 * sides must give the same decisions. Prints each window and the median ratio B/A.
 *
 *   node --experimental-strip-types --no-warnings loadtest/bench-authzen.ts [--rounds 6] [--requests 4000]
 *        [--concurrency 8] [--docs 2000]
 */
import { parseArgs } from "node:util";
import { seededRandom } from "@pemba/core";
import { cpuSeconds } from "./lib/proc.ts";
import { startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "6" },
    requests: { type: "string", default: "4000" },
    concurrency: { type: "string", default: "8" },
    docs: { type: "string", default: "2000" },
  },
});
const ROUNDS = Number(values.rounds);
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const DOCS = Number(values.docs);
const USERS = 500;
const ORGS = 50;
const DEPTH = 50; // AuthZEN's depth (no field for it): the check asks with the same

const SCHEMA = `entity user {}
entity organization {
  relation admin @user
  relation member @user
}
entity document {
  relation org @organization
  relation owner @user
  relation viewer @user @organization#member
  permission edit = owner or org.admin
  permission view = edit or viewer
}`;

const server = await startPemba("memory:");
const T = `${server.url}/v1/tenants/t1`;

async function post(path: string, body: unknown): Promise<unknown> {
  const res = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

const random = seededRandom(32);
const pick = (n: number) => Math.floor(random() * n);
const rel = (entity: string, relation: string, subject: string) => {
  const [et, ei] = entity.split(":");
  const [st, si, sr = ""] = subject.split(/[:#]/);
  return { entity: { type: et, id: ei }, relation, subject: { type: st, id: si, relation: sr } };
};

async function seedTenant(): Promise<void> {
  await post(`${T}/schemas/write`, { schema: SCHEMA });
  const tuples = [];
  for (let o = 0; o < ORGS; o++) {
    tuples.push(rel(`organization:o${o}`, "admin", `user:u${pick(USERS)}`));
    for (let k = 0; k < 20; k++) tuples.push(rel(`organization:o${o}`, "member", `user:u${pick(USERS)}`));
  }
  for (let d = 0; d < DOCS; d++) {
    tuples.push(rel(`document:d${d}`, "org", `organization:o${pick(ORGS)}`));
    tuples.push(rel(`document:d${d}`, "owner", `user:u${pick(USERS)}`));
    if (d % 3 === 0) tuples.push(rel(`document:d${d}`, "viewer", `organization:o${pick(ORGS)}#member`));
  }
  for (let i = 0; i < tuples.length; i += 1000) {
    await post(`${T}/data/write`, { metadata: {}, tuples: tuples.slice(i, i + 1000) });
  }
}

/** The questions: (document, permission, user), the same list for both sides. */
const QUESTIONS = Array.from({ length: 1000 }, () => ({
  doc: `d${pick(DOCS)}`,
  permission: random() < 0.5 ? "view" : "edit",
  user: `u${pick(USERS)}`,
}));

type Q = (typeof QUESTIONS)[number];
const checkBody = (q: Q) => ({
  metadata: { schema_version: "", snap_token: "", depth: DEPTH },
  entity: { type: "document", id: q.doc },
  permission: q.permission,
  subject: { type: "user", id: q.user, relation: "" },
});
const evaluationBody = (q: Q) => ({
  subject: { type: "user", id: q.user },
  action: { name: q.permission },
  resource: { type: "document", id: q.doc },
});

interface Side {
  name: string;
  /** Requests of one window. */
  requests: number;
  send(i: number): Promise<string>;
}

const single: [Side, Side] = [
  {
    name: "check",
    requests: REQUESTS,
    send: async (i) =>
      String(
        ((await post(`${T}/permissions/check`, checkBody(QUESTIONS[i % 1000]!))) as { can: string }).can,
      ),
  },
  {
    name: "AuthZEN evaluation",
    requests: REQUESTS,
    send: async (i) =>
      (
        (await post(`${T}/access/v1/evaluation`, evaluationBody(QUESTIONS[i % 1000]!))) as {
          decision: boolean;
        }
      ).decision
        ? "CHECK_RESULT_ALLOWED"
        : "CHECK_RESULT_DENIED",
  },
];

const batchOf = (i: number) => Array.from({ length: 100 }, (_, k) => QUESTIONS[(i * 100 + k) % 1000]!);
const batches: [Side, Side] = [
  {
    name: "bulk check x100",
    requests: Math.max(1, Math.round(REQUESTS / 10)),
    send: async (i) => {
      const out = (await post(`${T}/permissions/bulk-check`, {
        metadata: { schema_version: "", snap_token: "", depth: DEPTH },
        items: batchOf(i).map((q) => {
          const { metadata: _, ...item } = checkBody(q);
          return item;
        }),
      })) as { results: { can: string }[] };
      return out.results.map((r) => r.can === "CHECK_RESULT_ALLOWED").join(",");
    },
  },
  {
    name: "AuthZEN evaluations x100",
    requests: Math.max(1, Math.round(REQUESTS / 10)),
    send: async (i) => {
      const out = (await post(`${T}/access/v1/evaluations`, {
        evaluations: batchOf(i).map(evaluationBody),
      })) as { evaluations: { decision: boolean }[] };
      return out.evaluations.map((d) => d.decision).join(",");
    },
  },
];

/** One window: the side's requests over CONCURRENCY connections; server CPU per request (µs) and the answers. */
async function window(side: Side): Promise<{ cpuUs: number; answers: string[] }> {
  const answers: string[] = new Array(side.requests);
  let next = 0;
  const before = cpuSeconds(server.pid);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < side.requests; i = next++) answers[i] = await side.send(i);
    }),
  );
  const cpu = cpuSeconds(server.pid) - before;
  return { cpuUs: (cpu / side.requests) * 1e6, answers };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function compare([a, b]: [Side, Side]): Promise<void> {
  // warm-up: JIT and the compiled schema, both sides
  await window(a);
  await window(b);
  const cpu: Record<string, number[]> = { [a.name]: [], [b.name]: [] };
  const ratios: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? [a, b] : [b, a];
    const seen: Record<string, { cpuUs: number; answers: string[] }> = {};
    for (const side of order) seen[side.name] = await window(side);
    const [wa, wb] = [seen[a.name]!, seen[b.name]!];
    if (wa.answers.join("|") !== wb.answers.join("|"))
      throw new Error(`${a.name} and ${b.name} answer differently`);
    cpu[a.name]!.push(wa.cpuUs);
    cpu[b.name]!.push(wb.cpuUs);
    ratios.push(wb.cpuUs / wa.cpuUs);
    process.stdout.write(
      `round ${r + 1} (${order.map((s) => s.name).join(" then ")}): ${a.name} ${wa.cpuUs.toFixed(0)} µs, ` +
        `${b.name} ${wb.cpuUs.toFixed(0)} µs CPU/request, ratio ${(wb.cpuUs / wa.cpuUs).toFixed(3)}\n`,
    );
  }
  process.stdout.write(
    `${b.name} / ${a.name}: median ${median(cpu[b.name]!).toFixed(0)} / ${median(cpu[a.name]!).toFixed(0)} µs ` +
      `CPU/request, median of round ratios ${median(ratios).toFixed(3)} (min ${Math.min(...ratios).toFixed(3)}, ` +
      `max ${Math.max(...ratios).toFixed(3)})\n\n`,
  );
}

try {
  await seedTenant();
  process.stdout.write(
    `pemba serve (memory), ${DOCS} documents, ${USERS} users, ${ORGS} organizations; ${ROUNDS} rounds, ` +
      `${REQUESTS} single requests per window (${Math.round(REQUESTS / 10)} batches of 100), ` +
      `${CONCURRENCY} connections\n\n`,
  );
  await compare(single);
  await compare(batches);
} finally {
  await server.stop();
}
