/**
 * Three `pemba serve` instances on one PostgreSQL, requests routed at random. For each write (to a
 * random instance): the checks with the write's snap token on every instance (stale answers counted), then the time
 * from the write's answer (its commit is just before) until a check WITHOUT a token shows it on each other instance,
 * polled back to back. Prints stale answers and the p50/p99/max of that time.
 *
 *   node loadtest/bench-instances.ts [--repo DIR] [--writes 100] [--replica-refresh 1s]
 */
import { parseArgs } from "node:util";
import { startPostgres } from "@pemba/core/testing/node";
import { REPO_DIR, type ServerProcess, startPemba } from "./lib/servers.ts";

const { values } = parseArgs({
  options: {
    repo: { type: "string" },
    writes: { type: "string", default: "100" },
    "replica-refresh": { type: "string", default: "1s" },
  },
});
const WRITES = Number(values.writes);
const SCHEMA = "entity user {}\nentity doc {\n  relation viewer @user\n  permission view = viewer\n}";

async function post(url: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

const can = async (url: string, doc: number, snapToken: string) =>
  (
    await post(url, "/v1/tenants/t1/permissions/check", {
      metadata: { schema_version: "", snap_token: snapToken, depth: 20 },
      entity: { type: "doc", id: String(doc) },
      permission: "view",
      subject: { type: "user", id: "1", relation: "" },
    })
  ).can;

const pg = await startPostgres();
const servers: ServerProcess[] = [];
try {
  for (let i = 0; i < 3; i++) {
    servers.push(
      await startPemba(
        pg.url,
        ["--log-level", "warn", "--replica-refresh", values["replica-refresh"]],
        [],
        values.repo ?? REPO_DIR,
      ),
    );
  }
  const pick = () => servers[Math.floor(Math.random() * servers.length)]!;
  await post(pick().url, "/v1/tenants/t1/schemas/write", { schema: SCHEMA });
  let stale = 0;
  let answers = 0;
  const visible: number[] = [];
  for (let i = 0; i < WRITES; i++) {
    const writer = pick();
    const written = await post(writer.url, "/v1/tenants/t1/data/write", {
      metadata: { schema_version: "" },
      tuples: [
        { entity: { type: "doc", id: String(i) }, relation: "viewer", subject: { type: "user", id: "1" } },
      ],
    });
    const acked = performance.now();
    // without a token: back-to-back checks on each other instance until the write shows
    await Promise.all(
      servers
        .filter((s) => s !== writer)
        .map(async (s) => {
          while ((await can(s.url, i, "")) !== "CHECK_RESULT_ALLOWED") {
            if (performance.now() - acked > 10_000)
              throw new Error(`write ${i} not visible on ${s.url} after 10 s`);
          }
          visible.push(performance.now() - acked);
        }),
    );
    // with the write's token: every instance answers current
    for (const s of servers) {
      answers++;
      if ((await can(s.url, i, written.snap_token as string)) !== "CHECK_RESULT_ALLOWED") stale++;
    }
  }
  visible.sort((a, b) => a - b);
  const q = (p: number) => visible[Math.min(visible.length - 1, Math.floor(p * visible.length))]!.toFixed(1);
  console.log(
    `repo ${values.repo ?? REPO_DIR}, --replica-refresh ${values["replica-refresh"]}, ${WRITES} writes`,
  );
  console.log(`with the write's snap token: ${stale} stale of ${answers} answers`);
  console.log(
    `without a token, write answered -> visible on another instance (${visible.length} samples): p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms`,
  );
} finally {
  for (const s of servers) await s.stop();
  await pg.stop();
}
