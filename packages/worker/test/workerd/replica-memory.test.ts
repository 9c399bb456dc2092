/**
 * The Worker's working set under its byte budget, inside workerd on local D1: many small tenants and a large one,
 * on two D1 databases whose replicas share the isolate's one budget (PEMBA_REPLICA_MEMORY, estimated bytes). A check
 * of the large tenant holds only the keys it read; the budget stays under its cap by evicting the least recently
 * used keys of either database, and every answer stays right, from memory or read again after an eviction.
 */
import { env } from "cloudflare:test";
import { D1Store, PembaService, ReplicaStore, WorkingSetBudget } from "@pemba/core";
import { LOAD_TEST_SCHEMA, loadTestData } from "@pemba/core/testing";
import { beforeEach, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";

beforeEach(async () => {
  await emptyDatabase(env.DB);
  await emptyDatabase(env.DB2);
});

const meta = { schemaVersion: "", snapToken: "", depth: 20 };
const view = (id: number, user: number) => ({
  entity: { type: "content", id: String(id) },
  permission: "view",
  subject: { type: "user", id: String(user), relation: "" },
});

describe("the working set in one isolate: two databases, many small tenants and one large, one byte budget", () => {
  it("holds what checks read, stays under the budget across both databases, evicts, and answers right throughout", async () => {
    const SMALL = 12;
    const small = Array.from({ length: SMALL }, (_, i) => `small-${i}`);
    const writers = [
      new PembaService(await D1Store.open(env.DB)),
      new PembaService(await D1Store.open(env.DB2)),
    ];
    const home = (tenant: string) => (small.indexOf(tenant) % 2 === 1 ? 1 : 0);
    for (const name of [...small, "large"]) {
      const writer = writers[home(name)]!;
      await writer.createTenant(name, name);
      await writer.writeSchema(name, LOAD_TEST_SCHEMA);
      const data = loadTestData(name === "large" ? 1000 : 8);
      await writer.writeData(name, "", data.tuples, data.attributes);
    }

    // the large tenant (8,000 rows): a check holds the keys it read, not the tenant
    const probe = ReplicaStore.lazy(await D1Store.open(env.DB), {
      budget: new WorkingSetBudget(64 * 1048576),
      freshnessMs: 60_000,
    });
    const probing = new PembaService(probe);
    expect((await probing.check("large", meta, view(0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    const oneCheck = probe.stats();
    expect(oneCheck.rows).toBeGreaterThan(0);
    expect(oneCheck.rows).toBeLessThan(20);

    // room for about a third of the keys the run below reads
    const maxBytes = Math.floor(3 * oneCheck.bytes);
    const budget = new WorkingSetBudget(maxBytes);
    const replicas = [
      ReplicaStore.lazy(await D1Store.open(env.DB), { budget, freshnessMs: 60_000 }),
      ReplicaStore.lazy(await D1Store.open(env.DB2), { budget, freshnessMs: 60_000 }),
    ];
    const services = replicas.map((r) => new PembaService(r));
    const answers = async (tenant: string) => {
      const service = services[home(tenant)]!;
      // content 0: owner user 0 (allowed); content 1 and user 5: private, not a follower (denied)
      expect((await service.check(tenant, meta, view(0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
      expect((await service.check(tenant, meta, view(1, 5))).can).toBe("CHECK_RESULT_DENIED");
      expect(budget.bytes).toBeLessThanOrEqual(maxBytes);
    };
    for (let round = 0; round < 3; round++) for (const t of ["large", ...small]) await answers(t);
    expect(budget.evictions).toBeGreaterThan(0);
    // both databases' keys share the budget
    expect(replicas[0]!.stats().rows).toBeGreaterThan(0);
    expect(replicas[1]!.stats().rows).toBeGreaterThan(0);
    expect(replicas[0]!.stats().bytes).toBe(budget.bytes);
  });
});
