/**
 * `pemba serve --database <libSQL primary> --database-read-replicas <replica>,<replica>` on real sqld servers: the
 * primary a region away (a TCP forwarder delays every byte between it and the server, and between it and each
 * replica), two replicas near the server. Snap tokens read their writes over HTTP while writes run, and while the
 * nearest replica is stopped and started. Without an sqld binary this reports "real sqld NOT verified".
 */
import {
  describeWithSqld,
  type SqldReplicaSet,
  startSqldReplicaSet,
  tokenReadsThroughRestart,
} from "@pemba/core/testing/node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type CliProcess, runCli, startServe } from "../src/testing/cli-process.ts";

describeWithSqld("pemba serve with libSQL read replicas (real sqld)", () => {
  let set: SqldReplicaSet;
  let server: CliProcess & { url: string };

  beforeAll(async () => {
    set = await startSqldReplicaSet({
      record: true,
      beforeReplicas: async (primary) => {
        expect((await runCli(["migrate", "--database", primary.url])).code).toBe(0);
      },
    });
    server = await startServe([
      "--database",
      set.toPrimary.url,
      "--database-read-replicas",
      set.replicaUrls.join(","),
    ]);
  }, 60_000);
  afterAll(async () => {
    if (server?.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    await set?.stop();
  });

  it("snap tokens read their writes while writes run, and while the nearest replica is stopped and started", async () => {
    const reads = await tokenReadsThroughRestart((r) => fetch(r), server.url.replace(/\/$/, ""), "t1", set, {
      running: 10,
      restart: 8,
    });
    expect(reads).toMatchObject({
      running: { writes: 30, reads: 90, stale: 0, errors: [] },
      down: { writes: 24, reads: 72, stale: 0, errors: [] },
      up: { writes: 24, reads: 72, stale: 0, errors: [] },
    });
    // reads went to the nearest replica, and again after its restart
    expect(reads.nearestSent).toBeGreaterThan(0);
    expect(reads.again.batches).toBeGreaterThan(0);

    // the rows are the primary's: every write reached it
    const rows = await set.primary.query("SELECT count(*) AS n FROM tuples WHERE deleted_tx IS NULL");
    expect(rows).toEqual([{ n: 78 + reads.again.writes }]);
  }, 120_000);

  it("refuses read replicas of a local SQLite file, naming the setting's values", async () => {
    const r = await runCli([
      "serve",
      "--port",
      "0",
      "--database",
      "memory:",
      "--database-read-replicas",
      set.replicas[0]!.url,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("read replicas need a postgres:// database");
  });
});
