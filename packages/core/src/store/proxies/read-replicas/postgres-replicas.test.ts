/**
 * ReadReplicaStore over a real PostgreSQL primary and a real streaming replica (pg_basebackup -R, a hot standby):
 * a read goes to the replica only once the tenant's head there (its head_tx as replayed) reaches the read's snap;
 * with the whole stack in front (the working set on and off), reads with snap tokens never miss their write while
 * writes run, and reads go on while the replica is stopped and started again.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPemba, type Pemba } from "../../../create-pemba.ts";
import { PostgresStore } from "../../drivers/postgres.ts";
import { openStore } from "../../open.ts";
import { tuple } from "../../testing/fixtures.ts";
import { type PostgresServer, startPostgres } from "../../testing/postgres-server.ts";
import { prepareTokenReads, runTokenReads, tokenReadsUntil } from "../../testing/token-reads.ts";
import { ReadReplicaStore } from "./read-replica-store.ts";

let primary: PostgresServer;
let replica: PostgresServer;

beforeAll(async () => {
  primary = await startPostgres();
  // the tables exist before the base backup: the standby refuses DDL
  await (await PostgresStore.open(primary.url)).close();
  replica = await primary.startReplica();
}, 60_000);
afterAll(async () => {
  await replica?.stop();
  await primary?.stop();
});

async function sql<T>(url: string, text: string): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text)).rows[0]?.v as T;
  } finally {
    await c.end();
  }
}

/** Waits (bounded polls) until the replica has replayed everything the primary has written so far. */
async function caughtUp(): Promise<void> {
  const lsn = await sql<string>(primary.url, "SELECT pg_current_wal_lsn()::text AS v");
  for (let polls = 0; polls < 800; polls++) {
    if (await sql<boolean>(replica.url, `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS v`)) return;
    await new Promise((done) => setTimeout(done, 25));
  }
  throw new Error(`the replica did not replay ${lsn}`);
}

const viewers = (id: string) => [{ entityType: "doc", entityIds: [id], relations: ["viewer"] }];

describe("ReadReplicaStore on a PostgreSQL streaming replica", () => {
  it("reads at a snap the replica has replayed go to it; at one it has not (replay paused), to the primary", async () => {
    const store = (await openStore(primary.url, { readReplicas: [replica.url] })) as ReadReplicaStore;
    expect(store).toBeInstanceOf(ReadReplicaStore);
    try {
      await store.createTenant("paused", "paused").catch(() => undefined);
      const first = await store.write("paused", { tuples: [tuple("doc:1#viewer@user:1")] });
      await caughtUp();
      expect(await store.queryTuples("paused", first, viewers("1"))).toEqual([tuple("doc:1#viewer@user:1")]);
      expect(store.stats()).toMatchObject({ replica: [1], primaryBehind: 0, primaryAfterError: 0 });

      await sql(replica.url, "SELECT pg_wal_replay_pause() AS v");
      const second = await store.write("paused", { tuples: [tuple("doc:2#viewer@user:2")] });
      // the replica's head stays at `first` while replay is paused: the primary answers, with the write
      expect(await store.queryTuples("paused", second, viewers("2"))).toEqual([tuple("doc:2#viewer@user:2")]);
      expect(await store.readTuples("paused", second, { entity: { type: "doc", ids: ["2"] } }, 10)).toEqual({
        items: [tuple("doc:2#viewer@user:2")],
        cursor: "",
      });
      // a look must answer at least the newest snap this process saw: the replica's head is older
      expect(await store.headSnap("paused")).toBe(second);
      expect(store.stats()).toMatchObject({ replica: [1], primaryBehind: 3, primaryAfterError: 0 });
      // an older snap the replica has is still read there
      expect(await store.queryTuples("paused", first, viewers("2"))).toEqual([]);
      expect(store.stats().replica).toEqual([2]);

      await sql(replica.url, "SELECT pg_wal_replay_resume() AS v");
      await caughtUp();
      expect(await store.queryTuples("paused", second, viewers("2"))).toEqual([tuple("doc:2#viewer@user:2")]);
      expect(await store.headSnap("paused")).toBe(second);
      expect(store.stats()).toMatchObject({ replica: [4], primaryBehind: 3 });
    } finally {
      await store.close();
    }
  }, 60_000);

  for (const workingSet of [true, false]) {
    it(`snap tokens read their writes while writes run, and reads go on while the replica is stopped and started (working set ${workingSet ? "on" : "off"})`, async () => {
      let layer: ReadReplicaStore | undefined;
      const pemba: Pemba = await createPemba(
        {
          database: primary.url,
          databaseReadReplicas: [replica.url],
          auth: { mode: "none" },
          gcWindowMs: 0,
          maxWatchStreams: 10,
          maxCompiledSchemaMb: 16,
          replica: workingSet ? { maxBytes: 64 * 1048576, freshnessMs: 1000 } : undefined,
        },
        {
          name: "node",
          replica: "startup",
          openStore: async (database, readReplicas) => {
            layer = (await openStore(database, { readReplicas })) as ReadReplicaStore;
            return layer;
          },
        },
      );
      const tenant = workingSet ? "ws-on" : "ws-off";
      const base = "http://pemba.test";
      const fetcher = (r: Request) => pemba.fetch(r);
      try {
        await prepareTokenReads(fetcher, base, tenant);
        const running = await runTokenReads({
          fetch: fetcher,
          base,
          tenant,
          prefix: "a",
          writers: 4,
          rounds: 25,
        });
        expect(running).toMatchObject({ writes: 100, reads: 300, stale: 0, errors: [] });

        // every write replayed: the reads of new keys (fills, or SQL reads) go to the replica
        await caughtUp();
        const before = layer!.stats().replica[0]!;
        const settled = await runTokenReads({
          fetch: fetcher,
          base,
          tenant,
          prefix: "b",
          writers: 1,
          rounds: 1,
        });
        expect(settled).toMatchObject({ stale: 0, errors: [] });
        await caughtUp();
        const check = await pemba.fetch(
          new Request(`${base}/v1/tenants/${tenant}/data/relationships/read`, {
            method: "POST",
            body: JSON.stringify({
              metadata: {},
              filter: { entity: { type: "doc", ids: ["a-0-0", "a-3-24"] } },
            }),
          }),
        );
        expect(((await check.json()) as { tuples: unknown[] }).tuples).toHaveLength(2);
        expect(layer!.stats().replica[0]!).toBeGreaterThan(before);

        // the replica stops: reads fail over to the primary, none is lost or stale
        await replica.kill();
        const down = await runTokenReads({
          fetch: fetcher,
          base,
          tenant,
          prefix: "c",
          writers: 4,
          rounds: 10,
        });
        expect(down).toMatchObject({ writes: 40, reads: 120, stale: 0, errors: [] });
        expect(layer!.stats().primaryAfterError + layer!.stats().primaryBehind).toBeGreaterThan(0);

        // started again, it catches up and serves reads again (after the time a failed replica is left out)
        await replica.restart();
        const up = await runTokenReads({ fetch: fetcher, base, tenant, prefix: "d", writers: 4, rounds: 10 });
        expect(up).toMatchObject({ writes: 40, reads: 120, stale: 0, errors: [] });
        await caughtUp();
        const served = layer!.stats().replica[0]!;
        await tokenReadsUntil({
          fetch: fetcher,
          base,
          tenant,
          prefix: "e",
          writers: 1,
          rounds: 1,
          done: () => layer!.stats().replica[0]! > served,
          afterBatch: async (prefix) => {
            await caughtUp();
            const read = await pemba.fetch(
              new Request(`${base}/v1/tenants/${tenant}/data/relationships/read`, {
                method: "POST",
                body: JSON.stringify({
                  metadata: {},
                  filter: { entity: { type: "doc", ids: [`${prefix}-0-0`] } },
                }),
              }),
            );
            expect(((await read.json()) as { tuples: unknown[] }).tuples).toHaveLength(1);
          },
        });
      } finally {
        await pemba.close();
      }
    }, 120_000);
  }
});
