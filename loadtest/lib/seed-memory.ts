/**
 * Permify's seed dataset (the k6 seed writer's tuples and attributes) written straight into a MemoryStore, and the
 * k6 check script's request mix: what the in-process benchmarks (bench-core.ts, bench-explain.ts) run on.
 */
import {
  type Attribute,
  type CheckQuery,
  EvaluationPool,
  type EvaluationTarget,
  type MemoryStore,
  type Tuple,
} from "@pemba/core";

const user = (id: string) => ({ type: "user", id, relation: "" });

/**
 * `ids` users, contents and interactions: 6 tuples and 2 attributes per id (as k6/permify-seed-writer.js). With
 * `expiring` (a share, 0-1), that share of the tuples is written with `expiresAt` (bench-core --expiring).
 */
export async function seedMemoryStore(
  store: MemoryStore,
  tenantId: string,
  ids: number,
  opts: { expiring?: number; expiresAt?: number } = {},
): Promise<void> {
  const expiring = opts.expiring ?? 0;
  const expiresAt = opts.expiresAt ?? Date.now() + 3_600_000;
  for (let start = 0; start < ids; start += 1000) {
    const tuples: Tuple[] = [];
    const attributes: Attribute[] = [];
    for (let i = start; i < Math.min(ids, start + 1000); i++) {
      const id = String(i);
      tuples.push(
        { entity: { type: "user", id }, relation: "self", subject: user(id) },
        { entity: { type: "user", id }, relation: "follower", subject: user(String((i + 1) % ids)) },
        { entity: { type: "user", id }, relation: "blocked", subject: user(String((i + 2) % ids)) },
        { entity: { type: "content", id }, relation: "owner", subject: user(id) },
        { entity: { type: "interaction", id }, relation: "creator", subject: user(id) },
        {
          entity: { type: "interaction", id },
          relation: "parent",
          subject: { type: "content", id, relation: "" },
        },
      );
      const value = { type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data: i % 4 === 0 };
      attributes.push(
        { entity: { type: "user", id }, attribute: "is_public", value },
        { entity: { type: "content", id }, attribute: "is_public", value },
      );
    }
    if (expiring > 0) {
      const every = Math.round(1 / expiring);
      for (let k = 0; k < tuples.length; k++)
        if ((start * 6 + k) % every === 0) tuples[k].expiresAt = expiresAt;
    }
    await store.write(tenantId, { tuples, attributes });
  }
}

/**
 * `count` checks with the k6 script's mix: `view` on a random content or interaction for a random user, keeping
 * the entity and the subject of the previous check one time in ten.
 */
export function checkMix(ids: number, count: number): CheckQuery[] {
  const randomId = () => String(Math.floor(Math.random() * ids));
  let currentEntity = randomId();
  let currentSubject = randomId();
  const next = (): CheckQuery => {
    const type = Math.random() < 0.5 ? "content" : "interaction";
    if (Math.random() >= 0.1) currentEntity = randomId();
    if (Math.random() >= 0.1) currentSubject = randomId();
    return { entity: { type, id: currentEntity }, permission: "view", subject: user(currentSubject) };
  };
  return Array.from({ length: count }, next);
}

/** A check's target on the seeded store at its head, depth 20 (the k6 script's), with a pool of its own. */
export const memoryTarget = (store: MemoryStore, tenantId: string): EvaluationTarget => ({
  store,
  tenantId,
  snap: store.headSnap(tenantId),
  depth: 20,
  evaluations: new EvaluationPool(),
});
