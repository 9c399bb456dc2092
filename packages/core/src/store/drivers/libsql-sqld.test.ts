/**
 * LibsqlStore on a real libSQL server (sqld) over http://, with sqld's JWT token auth: the store contract suite on a
 * primary, and a replica that follows it. Without an sqld binary these report "real sqld NOT verified".
 */
import { createClient } from "@libsql/client";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeStoreContract } from "../contract/index.ts";
import { tuple } from "../testing/fixtures.ts";
import {
  describeWithSqld,
  type SqldKey,
  type SqldServer,
  sqldKey,
  startSqld,
} from "../testing/sqld-server.ts";
import { LibsqlStore } from "./libsql.ts";

describeWithSqld("LibsqlStore on a real sqld (http://, JWT auth)", () => {
  let primary: SqldServer;
  let key: SqldKey;
  let token: string;

  beforeAll(async () => {
    key = await sqldKey();
    token = await key.token();
    primary = await startSqld({ keys: [key] });
  });
  afterAll(async () => {
    await primary?.stop();
  });

  /** Empties the database (every table, so migrations run anew), for a fresh store per test. */
  async function wipe(): Promise<void> {
    const raw = createClient({ url: primary.url, authToken: token });
    try {
      const tables = await raw.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'libsql_%'",
      );
      if (tables.rows.length)
        await raw.batch(
          tables.rows.map((r) => `DROP TABLE "${String(r.name)}"`),
          "write",
        );
    } finally {
      raw.close();
    }
  }

  describeStoreContract("libsql on sqld", async () => {
    await wipe();
    return LibsqlStore.open(primary.url, { authToken: token });
  });

  it("refuses a missing token and one signed by another key, naming the server's answer", async () => {
    await wipe();
    const other = await (await sqldKey()).token();
    for (const authToken of [undefined, other]) {
      await expect(LibsqlStore.open(primary.url, { authToken })).rejects.toMatchObject({
        code: "SERVER_ERROR",
        message: "SERVER_ERROR: Server returned HTTP status 401",
      });
    }
    const store = await LibsqlStore.open(primary.url, { authToken: token });
    const snap = await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    expect(await store.headSnap("t1")).toBe(snap);
    await store.close();
  });

  it("a replica follows the primary; writes sent through the replica reach the primary", async () => {
    await wipe();
    const replica = await startSqld({ keys: [key], primaryGrpcUrl: primary.grpcUrl });
    try {
      const onPrimary = await LibsqlStore.open(primary.url, { authToken: token });
      const snap = await onPrimary.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
      // the replica does not migrate: the primary's tables reach it by replication
      const onReplica = await LibsqlStore.open(replica.url, { authToken: token, migrate: false });
      let polls = 0;
      while ((await Promise.resolve(onReplica.headSnap("t1")).catch(() => 0)) < snap) {
        if (++polls > 400) throw new Error(`replica did not reach snap ${snap}`);
        await new Promise((done) => setTimeout(done, 25));
      }
      const query = [{ entityType: "doc", entityIds: ["1"], relations: ["viewer"] }];
      expect(await onReplica.queryTuples("t1", snap, query)).toEqual([tuple("doc:1#viewer@user:1")]);

      const forwarded = await onReplica.write("t1", { tuples: [tuple("doc:2#viewer@user:2")] });
      expect(forwarded).toBeGreaterThan(snap);
      expect(await onPrimary.headSnap("t1")).toBe(forwarded);
      expect(
        await onPrimary.queryTuples("t1", forwarded, [
          { entityType: "doc", entityIds: ["2"], relations: ["viewer"] },
        ]),
      ).toEqual([tuple("doc:2#viewer@user:2")]);
      await onReplica.close();
      await onPrimary.close();
    } finally {
      await replica.stop();
    }
  }, 30_000);
});
