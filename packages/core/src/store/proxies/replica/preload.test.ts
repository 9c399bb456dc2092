/**
 * Whole-tenant preloading (ReplicaStore `preload`): it fills the check keys and attributes of every entity of the
 * head schema's types, so checks afterwards send no statement; it starts in the background when a tenant is first
 * followed and the first response does not wait for it; it stops at the byte budget without evicting, checks stay
 * exact; and it is exact under writes made while it runs (the property test runs it too: property.test.ts).
 * Statements counted on libSQL file: URLs through the executor's onQuery observer.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PembaService } from "../../../service/pemba-service.ts";
import { schemaPreloadKeys } from "../../../service/preload-keys.ts";
import { expectedView, LOAD_TEST_SCHEMA, loadTestData } from "../../../service/testing/load-test-schema.ts";
import { describeStoreContract } from "../../contract/index.ts";
import { LibsqlStore } from "../../drivers/libsql.ts";
import { tuple } from "../../testing/fixtures.ts";
import { type LazyReplicaOptions, ReplicaStore, WorkingSetBudget } from "./index.ts";
import { PRELOAD_BATCH } from "./preload.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-replica-preload-"));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeStoreContract("replica with preloading over libsql file", async () =>
  ReplicaStore.open(await LibsqlStore.open(`file:${join(dir, `contract-${n++}.db`)}`), {
    refreshMs: 0,
    preload: schemaPreloadKeys,
  }),
);

const meta = { schemaVersion: "", snapToken: "", depth: 20 };
const view = (type: string, id: number, user: number) => ({
  entity: { type, id: String(id) },
  permission: "view",
  subject: { type: "user", id: String(user), relation: "" },
});

const IDS = 100;

async function setUp(opts: { lazy?: LazyReplicaOptions; open?: boolean; maxBytes?: number }) {
  const file = join(dir, `preload-${n++}.db`);
  const writer = new PembaService(await LibsqlStore.open(`file:${file}`));
  await writer.writeSchema("t1", LOAD_TEST_SCHEMA);
  const { tuples, attributes } = loadTestData(IDS);
  await writer.writeData("t1", "", tuples, attributes);
  const kinds: string[] = [];
  const inner = await LibsqlStore.open(`file:${file}`, { onQuery: (kind) => kinds.push(kind) });
  kinds.length = 0;
  const budget = new WorkingSetBudget(opts.maxBytes ?? 64 * 1048576);
  const replica = opts.open
    ? await ReplicaStore.open(inner, { budget, refreshMs: 0, preload: schemaPreloadKeys })
    : ReplicaStore.lazy(inner, { budget, freshnessMs: 60_000, preload: schemaPreloadKeys, ...opts.lazy });
  const service = new PembaService(replica);
  return { writer, replica, service, kinds, budget };
}

/** Every check of the seed's rule over `count` content and interaction ids, against the rule. */
async function checkAll(service: PembaService, count: number) {
  for (let i = 0; i < count; i++) {
    for (const user of [i, (i + 1) % IDS, (i + 2) % IDS, (i + 7) % IDS]) {
      const want = expectedView(IDS, i, user) ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED";
      expect((await service.check("t1", meta, view("content", i, user))).can).toBe(want);
      expect((await service.check("t1", meta, view("interaction", i, user))).can).toBe(want);
    }
  }
}

describe("ReplicaStore preloading", () => {
  it("fills every check key of the tenant: the statements are the head schema, one id listing per type and one read per batch of ids; checks then send none", async () => {
    const { writer, replica, service, kinds } = await setUp({});
    const progress = await replica.preload("t1");
    const batches = 1 + Math.ceil((IDS - 1) / PRELOAD_BATCH);
    // user, content, interaction: each has relations or attributes
    expect(progress).toEqual({ end: "complete", steps: 3 * batches, ids: 3 * IDS });
    expect(kinds.filter((k) => k === "list_object_ids")).toHaveLength(3);
    expect(kinds.filter((k) => k === "read_schema")).toHaveLength(1);
    // per type: one id first (the bytes an id adds), then batches
    expect(kinds.filter((k) => k.startsWith("query_"))).toHaveLength(3 * batches);
    const stats = replica.stats();
    // 6 tuples and 2 attributes per id
    expect(stats.rows).toBe(8 * IDS);
    kinds.length = 0;
    await checkAll(service, IDS);
    // the checks' only statement: the head schema for the service's registry (read once, then cached)
    expect(kinds.filter((k) => k.startsWith("query_"))).toEqual([]);
    await replica.close();
    await writer.store.close();
  });

  it("starts when the tenant is first followed, and the first response does not wait for it", async () => {
    const { writer, replica, service } = await setUp({ open: true });
    expect((await service.check("t1", meta, view("content", 5, 6))).can).toBe("CHECK_RESULT_ALLOWED");
    // the first check answered while the preload had steps left (a turn of the event loop before each)
    const first = replica.preloadProgress("t1");
    expect(first?.end).toBeUndefined();
    expect(first?.steps ?? 0).toBeLessThan(3 * Math.ceil(IDS / PRELOAD_BATCH));
    const done = await replica.preload("t1");
    expect(done?.end).toBe("complete");
    await checkAll(service, 20);
    await replica.close();
    await writer.store.close();
  });

  it("stops at the budget without evicting; keys beyond it fill on demand and every answer stays exact", async () => {
    const maxBytes = 60_000;
    const { writer, replica, service, budget } = await setUp({ maxBytes });
    const progress = await replica.preload("t1");
    expect(progress?.end).toBe("budget");
    expect(progress!.ids).toBeLessThan(3 * IDS);
    expect(budget.bytes).toBeLessThanOrEqual(maxBytes);
    expect(budget.evictions).toBe(0);
    await checkAll(service, IDS);
    expect(budget.bytes).toBeLessThanOrEqual(maxBytes);
    await replica.close();
    await writer.store.close();
  });

  it("keys preloaded follow the change feed: a write of another instance is seen once the replica looks", async () => {
    const { writer, replica, service } = await setUp({ lazy: { freshnessMs: 0 } });
    await replica.preload("t1");
    expect((await service.check("t1", meta, view("content", 10, 50))).can).toBe("CHECK_RESULT_DENIED");
    await writer.writeData("t1", "", [tuple("user:10#follower@user:50")], []);
    expect((await service.check("t1", meta, view("content", 10, 50))).can).toBe("CHECK_RESULT_ALLOWED");
    await writer.deleteData("t1", { entity: { type: "content", ids: ["10"] } }, {});
    expect((await service.check("t1", meta, view("content", 10, 10))).can).toBe("CHECK_RESULT_DENIED");
    await replica.close();
    await writer.store.close();
  });

  it("off by default: nothing is read besides the checks' own keys", async () => {
    const file = join(dir, `preload-${n++}.db`);
    const writer = new PembaService(await LibsqlStore.open(`file:${file}`));
    await writer.writeSchema("t1", LOAD_TEST_SCHEMA);
    const { tuples, attributes } = loadTestData(IDS);
    await writer.writeData("t1", "", tuples, attributes);
    const replica = ReplicaStore.lazy(await LibsqlStore.open(`file:${file}`), { freshnessMs: 60_000 });
    const service = new PembaService(replica);
    await service.check("t1", meta, view("content", 5, 6));
    expect(await replica.preload("t1")).toBeUndefined();
    expect(replica.stats().rows).toBeLessThan(20);
    await replica.close();
    await writer.store.close();
  });
});
