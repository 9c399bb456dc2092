/**
 * `pemba serve --database <libSQL primary> --database-read-replicas <replica>,<replica>` on real sqld servers: the
 * primary a region away (a TCP forwarder delays every byte between it and the server, and between it and each
 * replica), two replicas near the server. Snap tokens read their writes over HTTP while writes run, and while the
 * nearest replica is stopped and started. Without an sqld binary this reports "real sqld NOT verified".
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
import { type CliProcess, runCli, startServe } from "../src/testing/cli-process.ts";

describeWithSqld("pemba serve with libSQL read replicas (real sqld)", () => {
  let primary: SqldServer;
  let toPrimary: DelayProxy;
  const links: DelayProxy[] = [];
  const replicas: SqldServer[] = [];
  /** In front of each replica: the requests it was sent. */
  const seen: RecordingProxy[] = [];
  let server: CliProcess & { url: string };

  beforeAll(async () => {
    primary = await startSqld();
    toPrimary = await startDelayProxy(primary.url, 20);
    const migrated = await runCli(["migrate", "--database", primary.url]);
    expect(migrated.code).toBe(0);
    for (let i = 0; i < 2; i++) {
      const link = await startDelayProxy(primary.grpcUrl!, 30);
      links.push(link);
      replicas.push(await startSqld({ primaryGrpcUrl: link.url }));
      seen.push(await recordRequests(replicas[i]!.url));
    }
    server = await startServe([
      "--database",
      toPrimary.url,
      "--database-read-replicas",
      seen.map((r) => r.url).join(","),
    ]);
  }, 60_000);
  afterAll(async () => {
    if (server?.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    for (const r of seen) await r.close();
    for (const r of replicas) await r.stop();
    for (const l of links) await l.close();
    await toPrimary?.close();
    await primary?.stop();
  });

  it("snap tokens read their writes while writes run, and while the nearest replica is stopped and started", async () => {
    const base = server.url.replace(/\/$/, "");
    const fetcher = (r: Request) => fetch(r);
    await prepareTokenReads(fetcher, base, "t1");
    const running = await runTokenReads({
      fetch: fetcher,
      base,
      tenant: "t1",
      prefix: "a",
      writers: 3,
      rounds: 10,
    });
    expect(running).toMatchObject({ writes: 30, reads: 90, stale: 0, errors: [] });

    // reads went to the nearest replica
    expect(seen[0]!.requests().length).toBeGreaterThan(0);

    const stopping = replicas[0]!.kill();
    const down = await runTokenReads({
      fetch: fetcher,
      base,
      tenant: "t1",
      prefix: "b",
      writers: 3,
      rounds: 8,
    });
    await stopping;
    expect(down).toMatchObject({ writes: 24, reads: 72, stale: 0, errors: [] });

    await replicas[0]!.restart();
    const up = await runTokenReads({
      fetch: fetcher,
      base,
      tenant: "t1",
      prefix: "c",
      writers: 3,
      rounds: 8,
    });
    expect(up).toMatchObject({ writes: 24, reads: 72, stale: 0, errors: [] });

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

    // the rows are the primary's: every write reached it
    const rows = await primary.query("SELECT count(*) AS n FROM tuples WHERE deleted_tx IS NULL");
    expect(rows).toEqual([{ n: 80 }]);
  }, 120_000);

  it("refuses read replicas of a local SQLite file, naming the setting's values", async () => {
    const r = await runCli([
      "serve",
      "--port",
      "0",
      "--database",
      "memory:",
      "--database-read-replicas",
      replicas[0]!.url,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("read replicas need a postgres:// database");
  });
});
