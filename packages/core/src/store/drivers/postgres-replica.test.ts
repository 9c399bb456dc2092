/**
 * A real PostgreSQL streaming replica (the throwaway server's startReplica: `pg_basebackup -R`, a hot standby):
 * PostgresStore reads on it see what the primary wrote once the replica's replayed WAL position
 * (pg_last_wal_replay_lsn()) reaches the write's LSN (pg_current_wal_lsn() after it), it refuses writes, and after
 * a stop and start it catches up again.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tuple } from "../testing/fixtures.ts";
import { type PostgresServer, startPostgres } from "../testing/postgres-server.ts";
import { PostgresStore } from "./postgres.ts";

let primary: PostgresServer;
let replica: PostgresServer;

beforeAll(async () => {
  primary = await startPostgres();
  replica = await primary.startReplica();
}, 60_000);
afterAll(async () => {
  await replica?.stop();
  await primary?.stop();
});

async function one<T>(url: string, sql: string): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows[0].v as T;
  } finally {
    await c.end();
  }
}

/** Waits (bounded polls) until the replica has replayed the primary's WAL up to `lsn`. */
async function replayed(lsn: string): Promise<number> {
  for (let polls = 1; polls <= 400; polls++) {
    if (await one<boolean>(replica.url, `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS v`))
      return polls;
    await new Promise((done) => setTimeout(done, 25));
  }
  throw new Error(`the replica did not replay ${lsn}`);
}

const query = (id: string) => [{ entityType: "doc", entityIds: [id], relations: ["viewer"] }];

describe("PostgreSQL streaming replica (pg_basebackup -R)", () => {
  it("is a hot standby that replays the primary's writes and refuses its own", async () => {
    expect(await one<boolean>(replica.url, "SELECT pg_is_in_recovery() AS v")).toBe(true);
    const writer = await PostgresStore.open(primary.url);
    const snap = await writer.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    const lsn = await one<string>(primary.url, "SELECT pg_current_wal_lsn()::text AS v");
    await replayed(lsn);

    const reader = await PostgresStore.open(replica.url, { migrate: false });
    expect(await reader.headSnap("t1")).toBe(snap);
    expect(await reader.queryTuples("t1", snap, query("1"))).toEqual([tuple("doc:1#viewer@user:1")]);
    // a hot standby runs every transaction read-only (SQLSTATE 25006): the write fails as a statement error
    await expect(reader.write("t1", { tuples: [tuple("doc:2#viewer@user:2")] })).rejects.toMatchObject({
      code: "ERROR_CODE_SQL_EXECUTION",
    });
    expect(await reader.headSnap("t1")).toBe(snap);
    await reader.close();
    await writer.close();
  }, 60_000);

  it("stopped, it misses writes; started again, it catches up", async () => {
    const writer = await PostgresStore.open(primary.url, { migrate: false });
    await replica.kill();
    const snap = await writer.write("t1", { tuples: [tuple("doc:3#viewer@user:3")] });
    const lsn = await one<string>(primary.url, "SELECT pg_current_wal_lsn()::text AS v");
    await replica.restart();
    await replayed(lsn);
    const reader = await PostgresStore.open(replica.url, { migrate: false });
    expect(await reader.headSnap("t1")).toBe(snap);
    expect(await reader.queryTuples("t1", snap, query("3"))).toEqual([tuple("doc:3#viewer@user:3")]);
    await reader.close();
    await writer.close();
  }, 60_000);
});
