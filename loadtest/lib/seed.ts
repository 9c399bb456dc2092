/** Permify's v1.6.9 load-test dataset: the schema, the k6 seed writer, and spot checks of the seeded data. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type K6Run, LOADTEST_DIR, runK6 } from "./k6.ts";

export const TENANT_ID = "t1";

/** The schema of Permify's load-test document, verbatim (loadtest/k6/permify.perm). */
export const SEED_SCHEMA = readFileSync(join(LOADTEST_DIR, "k6", "permify.perm"), "utf8");

/** JSON headers, with `Authorization: Bearer <token>` when a token is given. */
export function jsonHeaders(token?: string): Record<string, string> {
  return token
    ? { "content-type": "application/json", authorization: `Bearer ${token}` }
    : { "content-type": "application/json" };
}

/** POSTs `body` as JSON and returns the parsed answer; throws with the status and body when not 2xx. */
export async function postJson<T>(url: string, body: unknown, token?: string): Promise<T> {
  const response = await fetch(url, {
    method: "POST",
    headers: jsonHeaders(token),
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok)
    throw new Error(`POST ${new URL(url).pathname}: ${response.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

/** Writes `schema` (default: Permify's load-test schema) to the tenant; returns its version. */
export async function writeSeedSchema(url: string, token?: string, schema = SEED_SCHEMA): Promise<string> {
  const body = await postJson<{ schema_version?: string }>(
    `${url}/v1/tenants/${TENANT_ID}/schemas/write`,
    { schema },
    token,
  );
  if (!body.schema_version) throw new Error(`schema write answered no version: ${JSON.stringify(body)}`);
  return body.schema_version;
}

export interface SeedResult {
  seconds: number;
  tuples: number;
  attributes: number;
}

export interface SeedOptions {
  token?: string;
  /** Ids per entity type (default 100,000, Permify's). */
  totalIds?: number;
  /** How to run k6 (default: runK6); `pnpm loadtest` passes its own to chart the run. */
  k6?: (script: string, env: Record<string, string | number>) => Promise<K6Run>;
}

/** Runs Permify's seed writer (100,000 ids = 600,000 tuples + 200,000 attributes in batches of 1,000). */
export async function seed(
  url: string,
  schemaVersion: string,
  log: (line: string) => void,
  options: SeedOptions = {},
): Promise<SeedResult> {
  const totalIds = options.totalIds ?? 100_000;
  const env = {
    PEMBA_URL: url,
    TENANT_ID,
    SCHEMA_VERSION: schemaVersion,
    PEMBA_TOKEN: options.token ?? "",
    TOTAL_IDS: totalIds,
  };
  const run = await (options.k6 ?? ((script, e) => runK6(script, e, log)))("permify-seed-writer.js", env);
  const batchFailed = /FAILED status=/.test(run.output);
  if (run.exitCode !== 0 || batchFailed || !run.output.includes(`Seeded ${totalIds} users`)) {
    throw new Error(`seeding failed (k6 exit ${run.exitCode}):\n${run.output.slice(-3000)}`);
  }
  return { seconds: run.seconds, tuples: 6 * totalIds, attributes: 2 * totalIds };
}

/** Decisions that follow from the seed: user i's follower is user i+1, its blocked user is i+2 (mod the number of
 * ids, 100,000 by default); ids with i % 4 == 0 are public. */
export function spotChecks(totalIds = 100_000): { entity: string; subject: string; expected: string }[] {
  return [...SPOT_CHECKS.slice(0, -1), { ...SPOT_CHECKS.at(-1)!, entity: `content:${totalIds - 1}` }];
}

const SPOT_CHECKS: { entity: string; subject: string; expected: string }[] = [
  { entity: "content:0", subject: "user:0", expected: "CHECK_RESULT_ALLOWED" }, // owner.self
  { entity: "content:1", subject: "user:2", expected: "CHECK_RESULT_ALLOWED" }, // owner.follower
  { entity: "content:1", subject: "user:5", expected: "CHECK_RESULT_DENIED" }, // private, not a follower
  { entity: "content:0", subject: "user:2", expected: "CHECK_RESULT_DENIED" }, // public but blocked
  { entity: "content:0", subject: "user:7", expected: "CHECK_RESULT_ALLOWED" }, // public
  { entity: "interaction:4", subject: "user:4", expected: "CHECK_RESULT_ALLOWED" }, // creator.self
  { entity: "interaction:8", subject: "user:9", expected: "CHECK_RESULT_ALLOWED" }, // creator.view and parent.view
  { entity: "interaction:8", subject: "user:10", expected: "CHECK_RESULT_DENIED" }, // blocked by the creator
  { entity: "content:99999", subject: "user:0", expected: "CHECK_RESULT_ALLOWED" }, // follower wraps around
];

export async function check(
  url: string,
  schemaVersion: string,
  entity: string,
  subject: string,
  token?: string,
): Promise<string> {
  const [entityType, entityId] = entity.split(":");
  const [, subjectId] = subject.split(":");
  const body = await postJson<{ can?: string }>(
    `${url}/v1/tenants/${TENANT_ID}/permissions/check`,
    {
      metadata: { snap_token: "", schema_version: schemaVersion, depth: 20 },
      entity: { type: entityType, id: entityId },
      permission: "view",
      subject: { type: "user", id: subjectId },
    },
    token,
  );
  return body.can ?? "";
}

/** Throws on the first seeded decision that comes out wrong. */
export async function spotCheck(
  url: string,
  schemaVersion: string,
  token?: string,
  totalIds = 100_000,
): Promise<number> {
  for (const c of spotChecks(totalIds)) {
    const can = await check(url, schemaVersion, c.entity, c.subject, token);
    if (can !== c.expected)
      throw new Error(`spot check ${c.entity} view ${c.subject}: ${can}, expected ${c.expected}`);
  }
  return SPOT_CHECKS.length;
}
