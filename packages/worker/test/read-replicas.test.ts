/**
 * The Worker in workerd (`wrangler dev` on the shipped entry) with PEMBA_DATABASE = a libSQL primary a region away
 * (a TCP forwarder delays every byte between it and the Worker, and between it and each replica) and
 * PEMBA_DATABASE_READ_REPLICAS = two sqld replicas near the Worker: snap tokens read their writes while writes
 * run, and while the nearest replica is stopped and started. Without an sqld binary: "real sqld NOT verified".
 */
import {
  type DelayProxy,
  describeWithSqld,
  prepareTokenReads,
  type RecordingProxy,
  recordRequests,
  runTokenReads,
  type SqldServer,
  startDelayProxy,
  startSqld,
} from "@pemba/core/testing/node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";

describeWithSqld("Worker with libSQL read replicas (real sqld, wrangler dev)", () => {
  let primary: SqldServer;
  let toPrimary: DelayProxy;
  const links: DelayProxy[] = [];
  const replicas: SqldServer[] = [];
  /** In front of each replica: the requests it was sent. */
  const seen: RecordingProxy[] = [];
  let w: WranglerDev | undefined;

  beforeAll(async () => {
    primary = await startSqld();
    toPrimary = await startDelayProxy(primary.url, 20);
    // the first request migrates the primary; the replicas receive the tables by replication
    for (let i = 0; i < 2; i++) {
      const link = await startDelayProxy(primary.grpcUrl!, 30);
      links.push(link);
      replicas.push(await startSqld({ primaryGrpcUrl: link.url }));
      seen.push(await recordRequests(replicas[i]!.url));
    }
    w = await startWranglerDev({
      PEMBA_DATABASE: toPrimary.url,
      PEMBA_DATABASE_READ_REPLICAS: seen.map((r) => r.url).join(","),
    });
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    for (const r of seen) await r.close();
    for (const r of replicas) await r.stop();
    for (const l of links) await l.close();
    await toPrimary?.close();
    await primary?.stop();
  });

  it("snap tokens read their writes while writes run, and while the nearest replica is stopped and started", async () => {
    const base = w!.url.replace(/\/$/, "");
    const fetcher = (r: Request) => fetch(r);
    await prepareTokenReads(fetcher, base, "t1");
    const running = await runTokenReads({
      fetch: fetcher,
      base,
      tenant: "t1",
      prefix: "a",
      writers: 3,
      rounds: 8,
    });
    expect(running).toMatchObject({ writes: 24, reads: 72, stale: 0, errors: [] });

    // reads went to the nearest replica
    expect(seen[0]!.requests().length).toBeGreaterThan(0);

    const stopping = replicas[0]!.kill();
    const down = await runTokenReads({
      fetch: fetcher,
      base,
      tenant: "t1",
      prefix: "b",
      writers: 3,
      rounds: 6,
    });
    await stopping;
    expect(down).toMatchObject({ writes: 18, reads: 54, stale: 0, errors: [] });

    await replicas[0]!.restart();
    const up = await runTokenReads({
      fetch: fetcher,
      base,
      tenant: "t1",
      prefix: "c",
      writers: 3,
      rounds: 6,
    });
    expect(up).toMatchObject({ writes: 18, reads: 54, stale: 0, errors: [] });

    const afterRestart = seen[0]!.requests().length;
    const more = await runTokenReads({
      fetch: fetcher,
      base,
      tenant: "t1",
      prefix: "d",
      writers: 1,
      rounds: 2,
    });
    expect(more).toMatchObject({ stale: 0, errors: [] });
    expect(seen[0]!.requests().length).toBeGreaterThan(afterRestart);

    // every write is the primary's; the replicas received them
    const rows = await primary.query("SELECT count(*) AS n FROM tuples WHERE deleted_tx IS NULL");
    expect(rows).toEqual([{ n: 62 }]);
  }, 180_000);
});
