/**
 * The lazy replica (ReplicaStore.lazy, the Worker's): no timer, tenants loaded on first use, request-driven
 * freshness (at most ONE statement per check, none inside the freshness window), and a row cap above which a
 * tenant's reads go to SQL. On libSQL file: URLs, statements counted through the executor's onQuery observer.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { PembaService } from "../../../service/pemba-service.ts";
import { LOAD_TEST_SCHEMA, loadTestData } from "../../../service/testing/load-test-schema.ts";
import { describeStoreContract } from "../../contract/index.ts";
import { LibsqlStore } from "../../drivers/libsql.ts";
import { tuple } from "../../testing/fixtures.ts";
import { CopyBudget, type LazyReplicaOptions, ReplicaStore } from "./index.ts";

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
  it("reads nothing before the first request; loads the tenant once; then checks run no statement in the window", async () => {
    const { writer, replica, service, kinds } = await setUp({ freshnessMs: 60_000 });
    expect(kinds).toEqual([]);
    expect(replica.holds("t1")).toBe(false);
    expect((await service.check("t1", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(replica.holds("t1")).toBe(true);
    expect(replica.stats()).toMatchObject({ tenants: 1, rows: 64 });
    kinds.length = 0;
    for (let i = 0; i < 50; i++) {
      const outcome = service.check("t1", meta, view(i % 2 ? "content" : "interaction", i % 8, (i + 1) % 8));
      expect(outcome instanceof Promise).toBe(false);
    }
    expect(kinds).toEqual([]);
    await replica.close();
    await writer.store.close();
  });

  it("outside the window a check runs exactly one freshness statement, and catches up when the head moved", async () => {
    const { writer, replica, service, kinds } = await setUp({ freshnessMs: 0 });
    await service.check("t1", meta, view("content", 1, 1)); // load
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

  it("a tenant above the row cap is never loaded: its checks read SQL, batched per level", async () => {
    const lines: string[] = [];
    const logger = {
      info: (_o: object, m: string) => lines.push(m),
      warn: (_o: object, m: string) => lines.push(m),
    };
    const { writer, replica, service, kinds } = await setUp({ freshnessMs: 60_000, maxRows: 63, logger });
    expect((await service.check("t1", meta, view("content", 4, 5))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(replica.holds("t1")).toBe(false);
    expect(replica.stats()).toMatchObject({ tenants: 0, rows: 0 });
    expect(lines).toEqual([
      "replica: tenant t1 does not fit under 63 rows (PEMBA_REPLICA_MAX_ROWS); its reads go to SQL",
    ]);
    kinds.length = 0;
    expect((await service.check("t1", meta, view("content", 4, 6))).can).toBe("CHECK_RESULT_DENIED");
    expect(kinds).toEqual(["head_snap", "query_reads", "query_tuples"]);
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
    for (const start of later.splice(0)) await start(); // the load
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

describe("ReplicaStore.lazy with background loads (the Worker's cold isolates)", () => {
  /** The inner store, whose paged tuple reads (the load's) wait until `open()`. */
  function gated() {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const wrap = (inner: LibsqlStore) =>
      new Proxy(inner, {
        get(target, key) {
          if (key === "readTuples") {
            return async (...args: Parameters<LibsqlStore["readTuples"]>) => {
              await gate;
              return target.readTuples(...args);
            };
          }
          const value = Reflect.get(target, key, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    return { open, wrap };
  }

  it("no check waits for the load: checks read SQL (one statement per walk level) until the copy is loaded, then none", async () => {
    const { open, wrap } = gated();
    const loads: Promise<unknown>[] = [];
    const { writer, replica, service, kinds } = await setUp(
      { freshnessMs: 60_000, background: (start) => loads.push(start()) },
      8,
      wrap,
    );
    // content 0 is owned by user 0: allowed by owner.self, read from SQL while the load waits at its gate
    expect((await service.check("t1", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    expect((await service.check("t1", meta, view("content", 1, 5))).can).toBe("CHECK_RESULT_DENIED");
    expect(replica.holds("t1")).toBe(false);
    expect(loads).toHaveLength(1); // one load, started by the first read
    expect(kinds.filter((k) => k === "query_tuples" || k === "query_reads").length).toBeGreaterThan(0);
    // a write while the load waits: visible to the next check, before and after the copy is loaded
    await service.writeData("t1", "", [tuple("user:1#follower@user:5")], []);
    expect((await service.check("t1", meta, view("content", 1, 5))).can).toBe("CHECK_RESULT_ALLOWED");
    open();
    await Promise.all(loads);
    expect(replica.holds("t1")).toBe(true);
    // the load read the tenant at the head before the write; a read at the write's snap catches the copy up
    expect(replica.stats()).toMatchObject({ tenants: 1, rows: 64 });
    expect((await service.check("t1", meta, view("content", 1, 5))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(replica.stats()).toMatchObject({ tenants: 1, rows: 65 });
    kinds.length = 0;
    for (let i = 0; i < 20; i++) {
      const outcome = service.check("t1", meta, view(i % 2 ? "content" : "interaction", i % 8, (i + 1) % 8));
      expect(outcome instanceof Promise).toBe(false);
    }
    expect(kinds).toEqual([]);
    await replica.close();
    await writer.store.close();
  });

  it("the runtime decides when a load starts: none runs before it calls start, and a tenant's load is handed over once", async () => {
    const starts: (() => Promise<unknown>)[] = [];
    const { writer, replica, service, kinds } = await setUp({
      freshnessMs: 60_000,
      background: (s) => starts.push(s),
    });
    for (let i = 0; i < 3; i++) {
      expect((await service.check("t1", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    }
    expect(starts).toHaveLength(1);
    // only the checks' own statements: no paged read of the load
    expect(kinds.filter((k) => k === "read_tuples" || k === "read_attributes")).toEqual([]);
    expect(replica.holds("t1")).toBe(false);
    await starts[0]!();
    expect(replica.holds("t1")).toBe(true);
    kinds.length = 0;
    expect(service.check("t1", meta, view("content", 0, 0)) instanceof Promise).toBe(false);
    expect(kinds).toEqual([]);
    await replica.close();
    await writer.store.close();
  });

  it("a failed load is logged and the next read starts another", async () => {
    let failing = true;
    const wrap = (inner: LibsqlStore) =>
      new Proxy(inner, {
        get(target, key) {
          if (key === "readTuples" && failing) {
            return async () => {
              throw new Error("d1 went away");
            };
          }
          const value = Reflect.get(target, key, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const lines: string[] = [];
    const logger = { info: () => {}, warn: (_o: object, m: string) => lines.push(m) };
    const loads: Promise<unknown>[] = [];
    const { writer, replica, service } = await setUp(
      { freshnessMs: 60_000, logger, background: (start) => loads.push(start()) },
      8,
      wrap,
    );
    expect((await service.check("t1", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    await Promise.all(loads);
    expect(lines.length).toBeGreaterThan(0);
    expect(new Set(lines)).toEqual(new Set(["replica: loading the tenant failed"]));
    expect(replica.holds("t1")).toBe(false);
    failing = false;
    const failed = loads.length;
    expect((await service.check("t1", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(loads).toHaveLength(failed + 1);
    await Promise.all(loads);
    expect(replica.holds("t1")).toBe(true);
    await replica.close();
    await writer.store.close();
  });
});

describe("ReplicaStore.lazy under a byte cap: least recently used tenants are evicted", () => {
  /** Tenants s0..s{n-1} with `ids` ids each and a large one, `big`, with `bigIds` (8 rows per id). */
  async function tenants(n: number, ids: number, bigIds: number) {
    const file = join(dir, `lru-${Date.now()}-${Math.random()}.db`);
    const writer = new PembaService(await LibsqlStore.open(`file:${file}`));
    const names = [...Array.from({ length: n }, (_, i) => `s${i}`), "big"];
    for (const name of names) {
      if (name !== "t1") await writer.createTenant(name, name);
      await writer.writeSchema(name, LOAD_TEST_SCHEMA);
      const data = loadTestData(name === "big" ? bigIds : ids);
      await writer.writeData(name, "", data.tuples, data.attributes);
    }
    return { writer, file, names };
  }

  it("many small tenants and a large one stay under maxBytes; eviction order is least recently used; answers stay right", async () => {
    const { writer, file } = await tenants(6, 8, 64);
    const lines: string[] = [];
    const logger = {
      info: (_o: object, m: string) => lines.push(m),
      warn: (_o: object, m: string) => lines.push(m),
    };
    // measure one small tenant's and the large one's estimated bytes on their own
    const probe = ReplicaStore.lazy(await LibsqlStore.open(`file:${file}`), { freshnessMs: 60_000 });
    const probeService = new PembaService(probe);
    await probeService.check("s0", meta, view("content", 0, 0));
    const small = probe.stats().bytes;
    await probeService.check("big", meta, view("content", 0, 0));
    const big = probe.stats().bytes - small;
    await probe.close();
    expect(small).toBeGreaterThan(64 * 32); // 64 rows, 32 bytes each at least
    expect(big).toBeGreaterThan(7 * small);

    // room for the large tenant and two small ones, not three
    const maxBytes = big + 2 * small + small / 2;
    const replica = ReplicaStore.lazy(await LibsqlStore.open(`file:${file}`), {
      freshnessMs: 60_000,
      maxBytes,
      logger,
    });
    const service = new PembaService(replica);
    const allowed = async (tenant: string) =>
      (await service.check(tenant, meta, view("content", 0, 0))).can === "CHECK_RESULT_ALLOWED";
    expect(await allowed("big")).toBe(true);
    expect(await allowed("s0")).toBe(true);
    expect(await allowed("s1")).toBe(true);
    expect(replica.stats()).toMatchObject({ tenants: 3 });
    // s0 is used again, so "big" is now the least recently used
    expect(await allowed("s0")).toBe(true);
    expect(await allowed("s2")).toBe(true);
    expect(lines).toEqual(["replica: evicted tenant big (least recently used) to make room for s2"]);
    expect(replica.holds("big")).toBe(false);
    expect(["s0", "s1", "s2"].every((t) => replica.holds(t))).toBe(true);
    expect(replica.stats().bytes).toBeLessThanOrEqual(maxBytes);
    // round robin over every tenant: always right, never above the cap
    for (let round = 0; round < 3; round++) {
      for (const t of ["s0", "s1", "s2", "s3", "s4", "s5", "big"]) {
        expect(await allowed(t)).toBe(true);
        expect((await service.check(t, meta, view("content", 1, 5))).can).toBe("CHECK_RESULT_DENIED");
        expect(replica.stats().bytes).toBeLessThanOrEqual(maxBytes);
      }
    }
    expect(replica.holds("big")).toBe(true);
    await replica.close();
    await writer.store.close();
  });

  it("replicas of several databases sharing one budget: the cap holds for all, the least recently used of any goes", async () => {
    // two databases (the Worker's D1 bindings), each with small tenants s0..s2 and a large one
    const a = await tenants(3, 8, 64);
    const b = await tenants(3, 8, 64);
    const probe = ReplicaStore.lazy(await LibsqlStore.open(`file:${a.file}`), { freshnessMs: 60_000 });
    await new PembaService(probe).check("s0", meta, view("content", 0, 0));
    const small = probe.stats().bytes;
    await probe.close();
    const lines: string[] = [];
    const logger = {
      info: (_o: object, m: string) => lines.push(m),
      warn: (_o: object, m: string) => lines.push(m),
    };
    // room for three small tenants, whichever databases they are on
    const maxBytes = 3 * small + small / 2;
    const budget = new CopyBudget();
    const replicaOf = async (file: string) =>
      ReplicaStore.lazy(await LibsqlStore.open(`file:${file}`), {
        freshnessMs: 60_000,
        maxBytes,
        logger,
        budget,
      });
    const [ra, rb] = [await replicaOf(a.file), await replicaOf(b.file)];
    const [sa, sb] = [new PembaService(ra), new PembaService(rb)];
    const allowed = async (service: PembaService, tenant: string) =>
      (await service.check(tenant, meta, view("content", 0, 0))).can === "CHECK_RESULT_ALLOWED";
    expect(await allowed(sa, "s0")).toBe(true);
    expect(await allowed(sb, "s0")).toBe(true);
    expect(await allowed(sa, "s1")).toBe(true);
    expect(lines).toEqual([]);
    // both replicas report the budget's totals: three small tenants
    expect(ra.stats().bytes).toBe(3 * small);
    expect(rb.stats().bytes).toBe(3 * small);
    // a fourth small tenant, on database b: database a's s0 is the least recently used of all
    expect(await allowed(sb, "s1")).toBe(true);
    expect(lines).toEqual(["replica: evicted tenant s0 (least recently used) to make room for s1"]);
    expect(ra.holds("s0")).toBe(false);
    expect([ra.holds("s1"), rb.holds("s0"), rb.holds("s1")]).toEqual([true, true, true]);
    expect(rb.stats().bytes).toBeLessThanOrEqual(maxBytes);
    // a large tenant does not fit with anyone: it is served by SQL on its own database, and answers right
    expect(await allowed(sa, "big")).toBe(true);
    expect(ra.holds("big")).toBe(false);
    expect(ra.stats().bytes).toBeLessThanOrEqual(maxBytes);
    for (const r of [ra, rb]) await r.close();
    for (const w of [a.writer, b.writer]) await w.store.close();
  });

  it("a tenant whose first page alone is larger than maxBytes is served by SQL and evicts nobody", async () => {
    const { writer, file } = await tenants(2, 8, 64);
    const lines: string[] = [];
    const logger = {
      info: (_o: object, m: string) => lines.push(m),
      warn: (_o: object, m: string) => lines.push(m),
    };
    const replica = ReplicaStore.lazy(await LibsqlStore.open(`file:${file}`), {
      freshnessMs: 60_000,
      maxBytes: 1048576 / 128,
      logger,
    });
    const service = new PembaService(replica);
    expect((await service.check("s0", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    expect((await service.check("s1", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    expect((await service.check("big", meta, view("content", 0, 0))).can).toBe("CHECK_RESULT_ALLOWED");
    expect(replica.holds("big")).toBe(false);
    expect(replica.holds("s0") && replica.holds("s1")).toBe(true);
    expect(lines).toEqual([
      "replica: tenant big does not fit in 0.01 MB (PEMBA_REPLICA_MAX_MB); its reads go to SQL",
    ]);
    expect(replica.stats().bytes).toBeLessThanOrEqual(1048576 / 128);
    await replica.close();
    await writer.store.close();
  });
});
