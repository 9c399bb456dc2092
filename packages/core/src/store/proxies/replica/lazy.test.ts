/**
 * The lazy replica (ReplicaStore.lazy, the Worker's): no timer, a tenant followed from its first request with one
 * look, keys filled by the checks' own reads, request-driven freshness (at most ONE statement per check, none inside
 * the freshness window), and a byte budget shared by the replicas of several databases. On libSQL file: URLs,
 * statements counted through the executor's onQuery observer.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { PembaService } from "../../../service/pemba-service.ts";
import { LOAD_TEST_SCHEMA, loadTestData } from "../../../service/testing/load-test-schema.ts";
import { setSharedWorkKeeper } from "../../../shared-work.ts";
import { describeStoreContract } from "../../contract/index.ts";
import { LibsqlStore } from "../../drivers/libsql.ts";
import { tuple } from "../../testing/fixtures.ts";
import { type LazyReplicaOptions, ReplicaStore, WorkingSetBudget } from "./index.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-replica-lazy-"));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeStoreContract("lazy replica over libsql file", async () =>
  ReplicaStore.lazy(await LibsqlStore.open(`file:${join(dir, `contract-${n++}.db`)}`), { freshnessMs: 0 }),
);

const meta = { schemaVersion: "", snapToken: "", depth: 20 };
const view = (type: string, id: number, user: number) => ({
  entity: { type, id: String(id) },
  permission: "view",
  subject: { type: "user", id: String(user), relation: "" },
});

async function setUp(opts: LazyReplicaOptions, ids = 8, wrap = (inner: LibsqlStore) => inner) {
  const file = join(dir, `lazy-${n++}.db`);
  const writer = new PembaService(await LibsqlStore.open(`file:${file}`));
  await writer.writeSchema("t1", LOAD_TEST_SCHEMA);
  const { tuples, attributes } = loadTestData(ids);
  await writer.writeData("t1", "", tuples, attributes);
  const kinds: string[] = [];
  const inner = await LibsqlStore.open(`file:${file}`, { onQuery: (kind) => kinds.push(kind) });
  kinds.length = 0; // migrations check at open
  const replica = ReplicaStore.lazy(wrap(inner), opts);
  const service = new PembaService(replica);
  return { writer, replica, service, kinds };
}

describe("ReplicaStore.lazy", () => {
  it("reads nothing before the first request; follows the tenant with one look; a key read once is not read again in the window", async () => {
    const { writer, replica, service, kinds } = await setUp({ freshnessMs: 60_000 });
    expect(kinds).toEqual([]);
    expect(replica.holds("t1")).toBe(false);
    expect((await service.check("t1", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(replica.holds("t1")).toBe(true);
    expect(kinds[0]).toBe("freshness");
    // nothing of the tenant is read whole
    expect(kinds.filter((k) => k === "read_tuples" || k === "read_attributes" || k === "changes")).toEqual(
      [],
    );
    const checks = Array.from({ length: 50 }, (_, i) =>
      view(i % 2 ? "content" : "interaction", i % 8, (i + 1) % 8),
    );
    for (const c of checks) await service.check("t1", meta, c);
    kinds.length = 0;
    for (const c of checks) {
      const outcome = service.check("t1", meta, c);
      expect(outcome instanceof Promise).toBe(false);
    }
    expect(kinds).toEqual([]);
    await replica.close();
    await writer.store.close();
  });

  it("outside the window a check runs exactly one freshness statement, and catches up when the head moved", async () => {
    const { writer, replica, service, kinds } = await setUp({ freshnessMs: 0 });
    await service.check("t1", meta, view("content", 1, 5)); // the keys it reads
    kinds.length = 0;
    expect((await service.check("t1", meta, view("content", 1, 5))).can).toBe("CHECK_RESULT_DENIED");
    expect(kinds).toEqual(["freshness"]);
    // another instance makes user 5 a follower of user 1 (the owner of content 1): the next check sees it
    await writer.writeData("t1", "", [tuple("user:1#follower@user:5")], []);
    kinds.length = 0;
    expect((await service.check("t1", meta, view("content", 1, 5))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(kinds[0]).toBe("freshness");
    expect(kinds.filter((k) => k === "freshness")).toHaveLength(1);
    expect(kinds.every((k) => k === "freshness" || k === "changes" || k === "gc_horizon")).toBe(true);
    await replica.close();
    await writer.store.close();
  });

  it("a tenant deleted elsewhere is dropped at the next look", async () => {
    const { writer, replica, service } = await setUp({ freshnessMs: 0 });
    await service.check("t1", meta, view("content", 0, 0));
    expect(replica.holds("t1")).toBe(true);
    await writer.deleteTenant("t1");
    await writer.createTenant("t1", "again");
    await writer.writeSchema("t1", LOAD_TEST_SCHEMA);
    expect((await service.check("t1", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_DENIED");
    await replica.close();
    await writer.store.close();
  });
});

describe("ReplicaStore.lazy and the head schema", () => {
  it("the replica's looks keep the cached head schema fresh: no schema statement of its own, a new head seen at the next look", async () => {
    // Date on a fake clock: the test says when time passes, so a loaded machine cannot let the TTL lapse early
    vi.useFakeTimers({ toFake: ["Date"] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const { writer, replica, kinds } = await setUp({ freshnessMs: 0 });
    const service = new PembaService(replica, { headSchemaTtlMs: 30 });
    expect((await service.check("t1", meta, view("content", 1, 2))).can).toBe("CHECK_RESULT_ALLOWED"); // follower
    kinds.length = 0;
    for (let i = 0; i < 8; i++) {
      vi.advanceTimersByTime(15); // the 30 ms TTL passes several times
      expect((await service.check("t1", meta, view("content", 1, 2))).can).toBe("CHECK_RESULT_ALLOWED");
    }
    expect(kinds).toEqual(Array(8).fill("freshness"));
    // another instance makes content#view owner-only: the next look drops the cached head, the check after reads it
    await writer.writeSchema(
      "t1",
      LOAD_TEST_SCHEMA.replace(
        "permission view = owner.self or (is_public or owner.follower) not owner.blocked",
        "permission view = owner.self",
      ),
    );
    await service.check("t1", meta, view("content", 1, 2));
    kinds.length = 0;
    expect((await service.check("t1", meta, view("content", 1, 2))).can).toBe("CHECK_RESULT_DENIED");
    expect(kinds).toContain("read_schema");
    await replica.close();
    await writer.store.close();
  });
});

describe("ReplicaStore.lazy with background work: looks at the database", () => {
  it("a look due within the second window runs after the check (which runs no statement); past it, before", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const later: (() => Promise<unknown>)[] = [];
    const { writer, replica, kinds } = await setUp({
      freshnessMs: 1000,
      background: (start) => later.push(start),
    });
    // the head schema's TTL as createPemba sets it for a lazy replica (its looks renew the head)
    const service = new PembaService(replica, { headSchemaTtlMs: 3000 });
    await service.check("t1", meta, view("content", 1, 5));
    expect(later).toEqual([]); // nothing is loaded in the background
    expect(replica.holds("t1")).toBe(true);
    // another instance makes user 5 a follower of user 1 (the owner of content 1)
    await writer.writeData("t1", "", [tuple("user:1#follower@user:5")], []);
    kinds.length = 0;
    vi.advanceTimersByTime(1500);
    // one window passed: answered from the copy at once, the look is handed to the background
    const due = service.check("t1", meta, view("content", 1, 5));
    expect(due instanceof Promise).toBe(false);
    expect((await due).can).toBe("CHECK_RESULT_DENIED");
    expect(kinds).toEqual([]);
    expect(later).toHaveLength(1);
    await later.pop()!();
    expect(kinds).toEqual(["freshness", "changes"]);
    kinds.length = 0;
    expect((await service.check("t1", meta, view("content", 1, 5))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(kinds).toEqual([]);
    // two windows passed: the check waits for the look
    await writer.writeData("t1", "", [tuple("user:1#follower@user:6")], []);
    vi.advanceTimersByTime(2500);
    kinds.length = 0;
    expect((await service.check("t1", meta, view("content", 1, 6))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(kinds).toEqual(["freshness", "changes"]);
    expect(later).toEqual([]);
    await replica.close();
    await writer.store.close();
  });
});

describe("ReplicaStore.lazy in a cold isolate", () => {
  it("no background work reads the tenant: the first check costs one look and its own reads, one statement per walk level", async () => {
    const starts: (() => Promise<unknown>)[] = [];
    const { writer, replica, service, kinds } = await setUp({
      freshnessMs: 60_000,
      background: (s) => starts.push(s),
    });
    expect((await service.check("t1", meta, view("content", 4, 5))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(starts).toEqual([]);
    const first = [...kinds];
    expect(first[0]).toBe("freshness");
    expect(
      first
        .slice(1)
        .every(
          (k) => k === "query_reads" || k === "query_tuples" || k === "read_schema" || k === "head_schema",
        ),
    ).toBe(true);
    kinds.length = 0;
    // the same check again: every key it reads is held
    expect(service.check("t1", meta, view("content", 4, 5)) instanceof Promise).toBe(false);
    expect(kinds).toEqual([]);
    await replica.close();
    await writer.store.close();
  });

  it("a read that fails is not filed: the next read asks the store again and answers right", async () => {
    let failing = true;
    const wrap = (inner: LibsqlStore) =>
      new Proxy(inner, {
        get(target, key) {
          if ((key === "queryTuplesAndAttributes" || key === "queryTuples") && failing) {
            return async () => {
              throw new Error("d1 went away");
            };
          }
          const value = Reflect.get(target, key, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const { writer, replica, service } = await setUp({ freshnessMs: 60_000 }, 8, wrap);
    await expect(service.check("t1", meta, view("content", 0, 0))).rejects.toThrow("d1 went away");
    expect(replica.stats().entries).toBe(0);
    failing = false;
    expect((await service.check("t1", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(replica.stats().entries).toBeGreaterThan(0);
    await replica.close();
    await writer.store.close();
  });
});

/** The store with `around` run for each of its feed reads (changes, freshnessAndChanges), `afterWrite` after each write. */
function aroundFeed(
  inner: LibsqlStore,
  around: (read: () => Promise<unknown>) => Promise<unknown>,
  afterWrite?: () => void,
): LibsqlStore {
  return new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      if (key === "changes" || key === "freshnessAndChanges") {
        return (...args: unknown[]) => around(() => value.apply(target, args));
      }
      if (key === "write" && afterWrite !== undefined) {
        return async (...args: unknown[]) => {
          const snap = await value.apply(target, args);
          afterWrite();
          return snap;
        };
      }
      return value.bind(target);
    },
  });
}

describe("ReplicaStore.lazy: writes waiting for their catch-up", () => {
  it("writes that commit while a catch-up is in flight share ONE more: each waits for at most two, however many and whatever they changed", async () => {
    // the feed reads answer what the database held when they were sent, and are held back after that while
    // `holding`: the writes below commit while the first catch-up is in flight
    const held: (() => void)[] = [];
    let holding = true;
    let feedReads = 0;
    let committed = 0;
    const wrap = (inner: LibsqlStore) =>
      aroundFeed(
        inner,
        async (read) => {
          feedReads++;
          const answer = await read();
          if (holding) await new Promise<void>((go) => held.push(go));
          return answer;
        },
        () => committed++,
      );
    const { writer, replica, service } = await setUp({ freshnessMs: 60_000 }, 8, wrap);
    await service.check("t1", meta, view("content", 1, 20)); // the tenant is followed
    feedReads = 0;
    const follower = (user: number) => tuple(`user:1#follower@user:${user}`);
    const writes = [service.writeData("t1", "", [follower(20)], [])];
    await vi.waitFor(() => expect(held).toHaveLength(1));
    // while that write's catch-up is in flight: writes that add rows, then deletes that match none (a snap each
    // with no row in the feed), each committed before the next is sent
    for (let i = 0; i < 12; i++) {
      writes.push(
        i < 6
          ? service.writeData("t1", "", [follower(21 + i)], [])
          : service.deleteRelationships("t1", {
              entity: { type: "user", ids: ["1"] },
              relation: "follower",
              subject: { type: "user", ids: [`nobody-${i}`], relation: "" },
            }),
      );
      await vi.waitFor(() => expect(committed).toBe(writes.length));
    }
    expect(feedReads).toBe(1);
    holding = false;
    held.shift()!();
    const tokens = await Promise.all(writes);
    // the first catch-up and one shared by the twelve writes that committed during it
    expect(feedReads).toBe(2);
    expect(new Set(tokens).size).toBe(13);
    // each write is seen by the checks that follow it (read your writes), with no look of theirs
    for (let user = 20; user < 27; user++) {
      expect((await service.check("t1", meta, view("content", 1, user))).can).toBe("CHECK_RESULT_ALLOWED");
    }
    expect(feedReads).toBe(2);
    await replica.close();
    await writer.store.close();
  });

  it("under workerd's rules, a catch-up that never settles (its request ended) is run again by the next waiter, and the tenant stays exact", async () => {
    // a keeper installed as the Worker does, with a short wait: the first write's feed read never answers
    setSharedWorkKeeper(() => {}, 50);
    onTestFinished(() => setSharedWorkKeeper(undefined));
    let feedReads = 0;
    const wrap = (inner: LibsqlStore) =>
      aroundFeed(inner, async (read) => {
        feedReads++;
        if (feedReads === 1) await new Promise<never>(() => {});
        return read();
      });
    const { writer, replica, service } = await setUp({ freshnessMs: 60_000 }, 8, wrap);
    await service.check("t1", meta, view("content", 1, 20)); // followed with its first look (no feed read)
    feedReads = 0;
    const follower = (user: number) => tuple(`user:1#follower@user:${user}`);
    void service.writeData("t1", "", [follower(20)], []); // its catch-up hangs, as a dead request's would
    await vi.waitFor(() => expect(feedReads).toBe(1));
    await service.writeData("t1", "", [follower(21)], []);
    expect(feedReads).toBe(2);
    for (const user of [20, 21]) {
      expect((await service.check("t1", meta, view("content", 1, user))).can).toBe("CHECK_RESULT_ALLOWED");
    }
    expect((await service.check("t1", meta, view("content", 1, 22))).can).toBe("CHECK_RESULT_DENIED");
    expect(feedReads).toBe(2);
    await replica.close();
    await writer.store.close();
  });
});

describe("ReplicaStore.lazy under a byte budget", () => {
  /** Tenants s0..s{n-1} with `ids` ids each (8 rows per id). */
  async function tenants(n: number, ids: number) {
    const file = join(dir, `lru-${n++}-${Math.random()}.db`);
    const writer = new PembaService(await LibsqlStore.open(`file:${file}`));
    const names = Array.from({ length: n }, (_, i) => `s${i}`);
    for (const name of names) {
      await writer.createTenant(name, name);
      await writer.writeSchema(name, LOAD_TEST_SCHEMA);
      const data = loadTestData(ids);
      await writer.writeData(name, "", data.tuples, data.attributes);
    }
    return { writer, file, names };
  }

  it("replicas of several databases sharing one budget: it holds for all, keys of any are evicted, answers stay right", async () => {
    // two databases (the Worker's D1 bindings), three tenants each
    const a = await tenants(3, 16);
    const b = await tenants(3, 16);
    const maxBytes = 24_000;
    const budget = new WorkingSetBudget(maxBytes);
    const replicaOf = async (file: string) =>
      ReplicaStore.lazy(await LibsqlStore.open(`file:${file}`), { freshnessMs: 60_000, budget });
    const [ra, rb] = [await replicaOf(a.file), await replicaOf(b.file)];
    const plain = [
      new PembaService(await LibsqlStore.open(`file:${a.file}`)),
      new PembaService(await LibsqlStore.open(`file:${b.file}`)),
    ];
    const services = [new PembaService(ra), new PembaService(rb)];
    for (let round = 0; round < 2; round++) {
      for (let db = 0; db < 2; db++) {
        for (const t of a.names) {
          for (let i = 0; i < 16; i++) {
            const c = view(i % 2 ? "content" : "interaction", i, (i * 3) % 16);
            const got = (await services[db]!.check(t, meta, c)).can;
            expect(got).toBe((await plain[db]!.check(t, meta, c)).can);
            expect(budget.bytes).toBeLessThanOrEqual(maxBytes);
          }
        }
      }
    }
    // both replicas report the budget's totals
    expect(ra.stats()).toMatchObject({ bytes: budget.bytes, entries: budget.entries, maxBytes });
    expect(rb.stats().bytes).toBe(budget.bytes);
    expect(budget.evictions).toBeGreaterThan(0);
    expect(ra.stats().misses + rb.stats().misses).toBeGreaterThan(budget.entries);
    for (const r of [ra, rb]) await r.close();
    for (const s of plain) await s.store.close();
    for (const w of [a.writer, b.writer]) await w.store.close();
  });
});
