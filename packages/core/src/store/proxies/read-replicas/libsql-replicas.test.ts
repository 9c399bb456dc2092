/**
 * ReadReplicaStore over real libSQL servers: a sqld primary a region away (every byte between it and Pemba, and
 * between it and each replica, delayed by a TCP forwarder) and two sqld replicas near Pemba. Reads go to the
 * nearest replica that has their snap; a snap it has not reached waits for it briefly, then goes to the primary;
 * writes go to the primary. With the whole stack in front, reads with snap tokens never miss their write while
 * writes run, and go on while a replica is stopped and started. Without sqld: "real sqld NOT verified".
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createPemba, type PembaRuntime } from "../../../create-pemba.ts";
import { LibsqlStore } from "../../drivers/libsql.ts";
import { openStore } from "../../open.ts";
import type { DelayProxy } from "../../testing/delay-proxy.ts";
import { tuple } from "../../testing/fixtures.ts";
import { type SqldReplicaSet, startSqldReplicaSet } from "../../testing/sqld-replicas.ts";
import { describeWithSqld, type SqldServer } from "../../testing/sqld-server.ts";
import { prepareTokenReads, runTokenReads, tokenReadsUntil } from "../../testing/token-reads.ts";
import type { ReadReplicaStore } from "./read-replica-store.ts";

/**
 * One way, between Pemba and the primary, and between the primary and each replica: a write's frames reach a
 * replica after its answer reaches Pemba, so a read right after it finds the replicas behind.
 */
const PRIMARY_DELAY_MS = 20;
const REPLICATION_DELAY_MS = 30;

describeWithSqld("ReadReplicaStore on sqld: a far primary and two near replicas", () => {
  let set: SqldReplicaSet;
  let toPrimary: DelayProxy;
  let links: DelayProxy[];
  let replicas: SqldServer[];

  beforeAll(async () => {
    set = await startSqldReplicaSet({
      primaryDelayMs: PRIMARY_DELAY_MS,
      replicationDelayMs: REPLICATION_DELAY_MS,
      // the tables exist before the replicas start: they receive them by replication
      beforeReplicas: async (primary) => (await LibsqlStore.open(primary.url)).close(),
    });
    ({ toPrimary, links, replicas } = set);
  }, 60_000);
  afterAll(async () => {
    await set?.stop();
  });

  /** Waits (bounded polls) until replica `i`'s transaction counter reaches `snap`. */
  async function replayed(i: number, snap: number): Promise<void> {
    const store = await LibsqlStore.open(replicas[i]!.url, { migrate: false });
    try {
      for (let polls = 0; polls < 800; polls++) {
        if ((await Promise.resolve(store.headSnap("")).catch(() => 0)) >= snap) return;
        await new Promise((done) => setTimeout(done, 25));
      }
      throw new Error(`replica ${i} did not reach snap ${snap}`);
    } finally {
      await store.close();
    }
  }

  const viewers = (id: string) => [{ entityType: "doc", entityIds: [id], relations: ["viewer"] }];

  it("a snap no replica has reached (replication held) waits, then the primary answers; once replayed, the nearest replica", async () => {
    const store = (await openStore(toPrimary.url, {
      readReplicas: replicas.map((r) => r.url),
    })) as ReadReplicaStore;
    try {
      const first = await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
      await replayed(0, first);
      await replayed(1, first);
      expect(await store.queryTuples("t1", first, viewers("1"))).toEqual([tuple("doc:1#viewer@user:1")]);
      expect(store.stats()).toMatchObject({ replica: [1, 0], primaryBehind: 0, waited: 0 });

      for (const link of links) link.hold();
      const second = await store.write("t1", { tuples: [tuple("doc:2#viewer@user:2")] });
      expect(await store.queryTuples("t1", second, viewers("2"))).toEqual([tuple("doc:2#viewer@user:2")]);
      expect(store.stats()).toMatchObject({ replica: [1, 0], primaryBehind: 1, waited: 0 });

      // the second replica gets the write; the nearest still waits: the read goes to the second
      links[1]!.release();
      await replayed(1, second);
      expect(await store.queryTuples("t1", second, viewers("2"))).toEqual([tuple("doc:2#viewer@user:2")]);
      expect(store.stats()).toMatchObject({ replica: [1, 1], primaryBehind: 1 });

      links[0]!.release();
      await replayed(0, second);
      expect(await store.queryTuples("t1", second, viewers("2"))).toEqual([tuple("doc:2#viewer@user:2")]);
      expect(store.stats()).toMatchObject({ replica: [2, 1], primaryBehind: 1 });
    } finally {
      for (const link of links) link.release();
      await store.close();
    }
  }, 60_000);

  const configurations: [string, PembaRuntime["replica"], boolean][] = [
    ["the Node server's working set", "startup", true],
    ["the Worker's lazy working set", "lazy", true],
    ["no working set (SQL reads)", "startup", false],
  ];
  for (const [name, mode, workingSet] of configurations) {
    it(`${name}: snap tokens read their writes while writes run; a replica stopped and started`, async () => {
      let layer: ReadReplicaStore | undefined;
      const pemba = await createPemba(
        {
          database: toPrimary.url,
          databaseReadReplicas: replicas.map((r) => r.url),
          auth: { mode: "none" },
          gcWindowMs: 0,
          maxWatchStreams: 10,
          maxCompiledSchemaMb: 16,
          replica: workingSet ? { maxBytes: 64 * 1048576, freshnessMs: 200 } : undefined,
        },
        {
          name: mode === "lazy" ? "worker" : "node",
          replica: mode,
          openStore: async (database, readReplicas) => {
            layer = (await openStore(database, { readReplicas })) as ReadReplicaStore;
            return layer;
          },
        },
      );
      const tenant = `${mode}-${workingSet}`;
      const base = "http://pemba.test";
      const fetcher = (r: Request) => pemba.fetch(r);
      try {
        await prepareTokenReads(fetcher, base, tenant);
        const running = await runTokenReads({
          fetch: fetcher,
          base,
          tenant,
          prefix: "a",
          writers: 3,
          rounds: 12,
        });
        expect(running).toMatchObject({ writes: 36, reads: 108, stale: 0, errors: [] });
        const served = (s = layer!.stats()) => s.replica[0]! + s.replica[1]!;
        expect(served()).toBeGreaterThan(0);

        // the nearest replica stops during the run: its reads go to the other replica or the primary
        const stopping = replicas[0]!.kill();
        const down = await runTokenReads({
          fetch: fetcher,
          base,
          tenant,
          prefix: "b",
          writers: 3,
          rounds: 8,
        });
        await stopping;
        expect(down).toMatchObject({ writes: 24, reads: 72, stale: 0, errors: [] });

        // started again on its data, it catches up through the delayed link and serves reads again
        await replicas[0]!.restart();
        const nearest = layer!.stats().replica[0]!;
        await tokenReadsUntil({
          fetch: fetcher,
          base,
          tenant,
          prefix: "c",
          writers: 1,
          rounds: 2,
          done: () => layer!.stats().replica[0]! > nearest,
        });
      } finally {
        await pemba.close();
      }
    }, 120_000);
  }
});
