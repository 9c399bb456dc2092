/** Permify's v1.6.9 load-test dataset: the schema, the k6 seed writer, and spot checks of the seeded data. */
import { runK6 } from "./k6.ts";

export const TENANT_ID = "t1";

/** The schema of /work/shared/seeds/permify-loadtest-v1.6.9.md, verbatim. */
export const SEED_SCHEMA = `entity user {
relation self @user
relation follower @user
relation blocked @user
attribute is_public boolean
permission view = self or (is_public or follower) not blocked
}
entity content {
relation owner @user
attribute is_public boolean
permission view = owner.self or (is_public or owner.follower) not owner.blocked
}
entity interaction {
relation creator @user
relation parent @content
permission view = creator.self or (creator.view and parent.view)
}
`;

export async function writeSeedSchema(url: string): Promise<string> {
  const response = await fetch(`${url}/v1/tenants/${TENANT_ID}/schemas/write`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ schema: SEED_SCHEMA }),
  });
  const body = (await response.json()) as { schema_version?: string };
  if (!response.ok || !body.schema_version) {
    throw new Error(`schema write failed: ${response.status} ${JSON.stringify(body)}`);
  }
  return body.schema_version;
}

export interface SeedResult {
  seconds: number;
  tuples: number;
  attributes: number;
}

/** Runs Permify's seed writer (100,000 ids = 600,000 tuples + 200,000 attributes in batches of 1,000). */
export async function seed(
  url: string,
  schemaVersion: string,
  log: (line: string) => void,
): Promise<SeedResult> {
  const run = await runK6(
    "permify-seed-writer.js",
    {
      PEMBA_URL: url,
      TENANT_ID,
      SCHEMA_VERSION: schemaVersion,
    },
    log,
  );
  const batchFailed = /FAILED status=/.test(run.output);
  if (run.exitCode !== 0 || batchFailed || !/Seeded 100000 users/.test(run.output)) {
    throw new Error(`seeding failed (k6 exit ${run.exitCode}):\n${run.output.slice(-3000)}`);
  }
  return { seconds: run.seconds, tuples: 600_000, attributes: 200_000 };
}

/** Decisions that follow from the seed: user i's follower is user i+1, its blocked user is i+2 (mod 100,000);
 * ids with i % 4 == 0 are public. */
export const SPOT_CHECKS: { entity: string; subject: string; expected: string }[] = [
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
): Promise<string> {
  const [entityType, entityId] = entity.split(":");
  const [, subjectId] = subject.split(":");
  const response = await fetch(`${url}/v1/tenants/${TENANT_ID}/permissions/check`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      metadata: { snap_token: "", schema_version: schemaVersion, depth: 20 },
      entity: { type: entityType, id: entityId },
      permission: "view",
      subject: { type: "user", id: subjectId },
    }),
  });
  const body = (await response.json()) as { can?: string };
  if (!response.ok) throw new Error(`check ${entity} ${subject}: ${response.status} ${JSON.stringify(body)}`);
  return body.can ?? "";
}

/** Throws on the first seeded decision that comes out wrong. */
export async function spotCheck(url: string, schemaVersion: string): Promise<number> {
  for (const c of SPOT_CHECKS) {
    const can = await check(url, schemaVersion, c.entity, c.subject);
    if (can !== c.expected)
      throw new Error(`spot check ${c.entity} view ${c.subject}: ${can}, expected ${c.expected}`);
  }
  return SPOT_CHECKS.length;
}
