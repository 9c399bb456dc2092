/**
 * The Worker in workerd (`wrangler dev` on the shipped entry) with PEMBA_DATABASE = a libSQL primary a region away
 * (a TCP forwarder delays every byte between it and the Worker, and between it and each replica) and
 * PEMBA_DATABASE_READ_REPLICAS = two sqld replicas near the Worker: snap tokens read their writes while writes
 * run, and while the nearest replica is stopped and started. Without an sqld binary: "real sqld NOT verified".
 */
import {
  describeWithSqld,
  type SqldReplicaSet,
  startSqldReplicaSet,
  tokenReadsThroughRestart,
} from "@pemba/core/testing/node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";

describeWithSqld("Worker with libSQL read replicas (real sqld, wrangler dev)", () => {
  let set: SqldReplicaSet;
  let w: WranglerDev | undefined;

  beforeAll(async () => {
    // the first request migrates the primary; the replicas receive the tables by replication
    set = await startSqldReplicaSet({ record: true });
    w = await startWranglerDev({
      PEMBA_DATABASE: set.toPrimary.url,
      PEMBA_DATABASE_READ_REPLICAS: set.replicaUrls.join(","),
    });
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    await set?.stop();
  });

  it("snap tokens read their writes while writes run, and while the nearest replica is stopped and started", async () => {
    const reads = await tokenReadsThroughRestart((r) => fetch(r), w!.url.replace(/\/$/, ""), "t1", set, {
      running: 8,
      restart: 6,
    });
    expect(reads).toMatchObject({
      running: { writes: 24, reads: 72, stale: 0, errors: [] },
      down: { writes: 18, reads: 54, stale: 0, errors: [] },
      up: { writes: 18, reads: 54, stale: 0, errors: [] },
    });
    // reads went to the nearest replica, and again after its restart
    expect(reads.nearestSent).toBeGreaterThan(0);
    expect(reads.again.batches).toBeGreaterThan(0);

    // every write is the primary's; the replicas received them
    const rows = await set.primary.query("SELECT count(*) AS n FROM tuples WHERE deleted_tx IS NULL");
    expect(rows).toEqual([{ n: 60 + reads.again.writes }]);
  }, 180_000);
});
