/**
 * The Worker's in-isolate replica under a byte cap, inside workerd on local D1 (issue 19 §4): many small tenants and
 * a large one share one isolate; the copy stays under its cap (PEMBA_REPLICA_MAX_MB, estimated bytes) by evicting the
 * least recently used tenants, and every answer stays right, from memory or again after an eviction.
 */
import { env } from "cloudflare:test";
import { D1Store, PembaService, ReplicaStore } from "@pemba/core";
import { LOAD_TEST_SCHEMA, loadTestData } from "@pemba/core/testing";
import { beforeEach, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";

beforeEach(async () => {
  await emptyDatabase(env.DB);
});

const meta = { schemaVersion: "", snapToken: "", depth: 20 };
const view = (id: number, user: number) => ({
  entity: { type: "content", id: String(id) },
  permission: "view",
  subject: { type: "user", id: String(user), relation: "" },
});

describe("the replica in one isolate: many small tenants and one large under a byte cap", () => {
  it("stays under the cap, evicts the least recently used tenant first, and answers right throughout", async () => {
    const writer = new PembaService(await D1Store.open(env.DB));
    const SMALL = 12;
    const small = Array.from({ length: SMALL }, (_, i) => `small-${i}`);
    for (const name of [...small, "large"]) {
      await writer.createTenant(name, name);
      await writer.writeSchema(name, LOAD_TEST_SCHEMA);
      const data = loadTestData(name === "large" ? 1000 : 8);
      await writer.writeData(name, "", data.tuples, data.attributes);
    }
    const infos: string[] = [];
    const logger = {
      info: (_o: object, m: string) => infos.push(m),
      warn: (_o: object, m: string) => infos.push(m),
    };

    // sizes on their own: one small tenant (64 rows), the large one (8,000 rows)
    const probe = ReplicaStore.lazy(await D1Store.open(env.DB), { freshnessMs: 60_000 });
    const probing = new PembaService(probe);
    await probing.check("small-0", meta, view(0, 0));
    const smallBytes = probe.stats().bytes;
    await probing.check("large", meta, view(0, 0));
    const largeBytes = probe.stats().bytes - smallBytes;
    expect(probe.stats().rows).toBe(64 + 8000);
    expect(largeBytes).toBeGreaterThan(100 * smallBytes);

    // room for the large tenant and half of the small ones
    const maxBytes = largeBytes + (SMALL / 2) * smallBytes + smallBytes / 2;
    const replica = ReplicaStore.lazy(await D1Store.open(env.DB), { freshnessMs: 60_000, maxBytes, logger });
    const service = new PembaService(replica);
    const answers = async (tenant: string) => {
      // content 0: owner user 0 (allowed); content 1 and user 5: private, not a follower (denied)
      expect((await service.check(tenant, meta, view(0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
      expect((await service.check(tenant, meta, view(1, 5))).can).toBe("CHECK_RESULT_DENIED");
      expect(replica.stats().bytes).toBeLessThanOrEqual(maxBytes);
    };
    await answers("large");
    for (const t of small) await answers(t);
    // the large tenant was the least recently used when the small ones needed room
    expect(infos[0]).toBe(
      `replica: evicted tenant large (least recently used) to make room for small-${SMALL / 2}`,
    );
    expect(replica.holds("large")).toBe(false);
    expect(small.every((t) => replica.holds(t))).toBe(true);
    // the large tenant again: the least recently used small ones (small-0, small-1, ...) make room, in that order
    infos.length = 0;
    await answers("large");
    expect(replica.holds("large")).toBe(true);
    const evicted = infos.map((m) => /evicted tenant (\S+)/.exec(m)?.[1]);
    expect(evicted).toEqual(small.slice(0, evicted.length));
    expect(evicted.length).toBeGreaterThanOrEqual(SMALL / 2);
    // every tenant in turn, three rounds: never above the cap, always the right answers
    for (let round = 0; round < 3; round++) for (const t of ["large", ...small]) await answers(t);
    expect(replica.stats().bytes).toBeLessThanOrEqual(maxBytes);
  });
});
