/**
 * Where a Worker isolate's D1 round trips go (issue 19: the edge), on two real local D1 databases: a primary and a
 * replica fed late (lagging-replica.ts). The store is the Worker's: a lazy replica loading tenants in the
 * background over a D1Store with per-request sessions. Each `request` counts D1 round trips (one `all()` or one
 * `batch()`) by target.
 */
import { env } from "cloudflare:test";
import { D1Sessions, D1Store, PembaService, ReplicaStore } from "@pemba/core";
import { beforeEach, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";
import { LaggingReplicaD1, type LoggedStatement } from "./lagging-replica.ts";

const SCHEMA = `entity user {}
entity team {
  relation member @user
}
entity doc {
  relation team @team
  relation viewer @user
  permission view = viewer or team.member
}`;
const tuple = (entity: string, relation: string, subject: string) => {
  const [et, ei] = entity.split(":");
  const [st, si] = subject.split(":");
  return { entity: { type: et!, id: ei! }, relation, subject: { type: st!, id: si!, relation: "" } };
};
const query = (doc: string, user: string) => ({
  entity: { type: "doc", id: doc },
  permission: "view",
  subject: { type: "user", id: user, relation: "" },
});
const meta = (snapToken = "") => ({ schemaVersion: "", snapToken, depth: 10 });

beforeEach(async () => {
  await emptyDatabase(env.DB);
  await emptyDatabase(env.REPLICA);
});

/** Round trips of a request's log: [target, ...] in order (statements of one batch are one trip). */
function trips(log: LoggedStatement[]): string[] {
  const seen = new Map<number, string>();
  for (const s of log) seen.set(s.request, s.target);
  return [...seen.values()];
}

async function setUp() {
  const db = new LaggingReplicaD1(env.DB, env.REPLICA);
  let current = new D1Sessions(db);
  /** Runs `work` as one request (its own sessions); its result and log. */
  const request = async <T>(work: () => Promise<T> | T) => {
    current = new D1Sessions(db);
    const from = db.log.length;
    const result = await work();
    return { result, log: db.log.slice(from) };
  };
  // another isolate: the writer (a plain D1Store)
  const writer = new PembaService(await D1Store.open(db, { sessions: () => current }));
  await request(() => writer.writeSchema("t1", SCHEMA));
  await request(() =>
    writer.writeData(
      "t1",
      "",
      [
        tuple("doc:1", "team", "team:a"),
        tuple("team:a", "member", "user:ann"),
        tuple("doc:2", "viewer", "user:bob"),
      ],
      [],
    ),
  );
  await db.catchUp();
  /** A new isolate: the Worker's store (background loads run when the test says) and a service on it. */
  const isolate = async () => {
    const loads: (() => Promise<unknown>)[] = [];
    const { result: replica, log } = await request(async () =>
      ReplicaStore.lazy(await D1Store.open(db, { sessions: () => current }), {
        freshnessMs: 60_000,
        background: (start) => loads.push(start),
      }),
    );
    const service = new PembaService(replica);
    const runLoads = async () => {
      for (const start of loads.splice(0)) await request(start);
    };
    return { replica, service, runLoads, openLog: log };
  };
  return { db, writer, request, isolate };
}

describe("the Worker's D1 round trips", () => {
  it("a cold isolate's first check without a token: every round trip at the replica, none at the primary", async () => {
    const { request, isolate } = await setUp();
    const { replica, service, openLog } = await isolate();
    expect(openLog).toEqual([]); // opening sends nothing: the first reads carry the migration check
    const first = await request(() => service.check("t1", meta(), query("1", "ann")));
    expect(first.result.can).toBe("CHECK_RESULT_ALLOWED");
    // the look at the head and the schema (sent together, each with the migration check), then one statement per
    // walk level (doc, then team)
    expect(trips(first.log)).toEqual(["replica", "replica", "replica", "replica"]);
    const checks = first.log.filter((s) => s.sql === `SELECT name FROM "d1_migrations"`);
    expect(checks.map((s) => s.request)).toEqual([first.log[0]!.request, first.log[2]!.request]);
    expect(replica.holds("t1")).toBe(false); // its load waits for the background
  });

  it("a loaded tenant: no statement for a check without a token; a token of another instance's write costs ONE round trip (the look and the feed), and sees the write", async () => {
    const { db, writer, request, isolate } = await setUp();
    const { replica, service, runLoads } = await isolate();
    await request(() => service.check("t1", meta(), query("1", "ann")));
    await runLoads();
    expect(replica.holds("t1")).toBe(true);
    const warm = await request(() => service.check("t1", meta(), query("2", "bob")));
    expect(warm.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(warm.log).toEqual([]);

    // another isolate writes; the replica has not seen it yet
    const { result: token } = await request(() =>
      writer.writeData("t1", "", [tuple("team:a", "member", "user:cy")], []),
    );
    const fresh = await request(() => service.check("t1", meta(token), query("1", "cy")));
    expect(fresh.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(trips(fresh.log)).toEqual(["primary"]);
    expect(fresh.log.map((s) => s.request)).toEqual([fresh.log[0]!.request, fresh.log[0]!.request]);

    // the same token once the replica has the write: no statement (the copy is caught up)
    await db.catchUp();
    const again = await request(() => service.check("t1", meta(token), query("1", "cy")));
    expect(again.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(again.log).toEqual([]);

    // a newer write, already at the replica: its token's one round trip goes to the replica
    const { result: later } = await request(() =>
      writer.writeData("t1", "", [tuple("doc:2", "viewer", "user:dee")], []),
    );
    await db.catchUp();
    const replicated = await request(() => service.check("t1", meta(later), query("2", "dee")));
    expect(replicated.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(trips(replicated.log)).toEqual(["replica"]);
  });

  it("while the tenant loads, a fresh token reads the schema from the look (no schema or horizon statement of its own)", async () => {
    const { writer, request, isolate } = await setUp();
    const { replica, service } = await isolate();
    await request(() => service.check("t1", meta(), query("1", "ann"))); // the load is queued, not run
    const { result: token } = await request(() =>
      writer.writeData("t1", "", [tuple("team:a", "member", "user:cy")], []),
    );
    const fresh = await request(() => service.check("t1", meta(token), query("1", "cy")));
    expect(fresh.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(replica.holds("t1")).toBe(false);
    // the look, then one statement per walk level, all at the primary (the replica lacks the write)
    expect(trips(fresh.log)).toEqual(["primary", "primary", "primary"]);
    expect(fresh.log.some((s) => s.sql.includes('FROM "schemas"') && !s.sql.includes("tenants"))).toBe(false);
  });
});
