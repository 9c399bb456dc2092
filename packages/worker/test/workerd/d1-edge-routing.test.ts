/**
 * Where a Worker isolate's D1 round trips go at the edge, on two real local D1 databases: a primary and a
 * replica fed late (lagging-replica.ts). The store is the Worker's: a lazy working-set replica, looks in the
 * background, over a D1Store with per-request sessions. Each `request` counts D1 round trips (one `all()` or one
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
/** With an attribute: attribute writes and deletes laid over the replica's rows too. */
const ATTRIBUTE_SCHEMA = `entity user {}
entity team {
  relation member @user
}
entity doc {
  relation team @team
  relation viewer @user
  attribute open boolean
  permission view = viewer or team.member or open
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

async function setUp(schema = SCHEMA) {
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
  await request(() => writer.writeSchema("t1", schema));
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
    // the look that starts following the tenant (the head) and the schema, each with the migration check, then one
    // statement per walk level (doc, then team) in the same session: the look's head is what that session has
    // seen, so the reads need no second look
    expect(trips(first.log)).toEqual(["replica", "replica", "replica", "replica"]);
    const checks = first.log.filter((s) => s.sql === `SELECT name FROM "d1_migrations"`);
    expect(checks.map((s) => s.request)).toEqual([first.log[0]!.request, first.log[2]!.request]);
    expect(replica.holds("t1")).toBe(true); // followed: the keys it read are in the working set
  });

  it("a followed tenant: no statement for a check of cached keys without a token; a token of another instance's write costs ONE round trip to the primary (the look and the feed, after one at the replica), and sees the write", async () => {
    const { db, writer, request, isolate } = await setUp();
    const { replica, service, runLoads } = await isolate();
    await request(() => service.check("t1", meta(), query("1", "ann")));
    await runLoads();
    expect(replica.holds("t1")).toBe(true);
    const warm = await request(() => service.check("t1", meta(), query("1", "ann")));
    expect(warm.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(warm.log).toEqual([]);

    // another isolate writes; the replica has not seen it yet
    const { result: token } = await request(() =>
      writer.writeData("t1", "", [tuple("team:a", "member", "user:cy")], []),
    );
    const fresh = await request(() => service.check("t1", meta(token), query("1", "cy")));
    expect(fresh.result.can).toBe("CHECK_RESULT_ALLOWED");
    // the nearest replica's look and feed (it lacks the write), then the primary's look and feed after it
    expect(trips(fresh.log)).toEqual(["replica", "primary"]);
    expect(fresh.log).toHaveLength(4);

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
    // the look and the feed, then doc:2's keys (never read in this isolate), all at the replica
    expect(trips(replicated.log).every((t) => t === "replica")).toBe(true);
    expect(replicated.log[0]!.sql).toContain("pemba_meta");
  });

  it("a followed tenant, a token at a lagging replica, keys never read: ONE round trip to the primary, the keys read at the replica with the primary's changes laid over", async () => {
    const { writer, request, isolate } = await setUp();
    const { replica, service, runLoads } = await isolate();
    await request(() => service.check("t1", meta(), query("1", "ann")));
    await runLoads();
    expect(replica.holds("t1")).toBe(true);
    const { result: token } = await request(() =>
      writer.writeData("t1", "", [tuple("doc:3", "viewer", "user:fay")], []),
    );
    const fresh = await request(() => service.check("t1", meta(token), query("3", "fay")));
    expect(fresh.result.can).toBe("CHECK_RESULT_ALLOWED");
    // the replica's look and feed, the primary's look and feed after the replica's head, then doc:3's walk levels
    // (viewer and team; the relations of one level in one statement) at the replica
    expect(trips(fresh.log)).toEqual(["replica", "primary", "replica"]);
    // and the same answer where the keys are now held: no statement
    const again = await request(() => service.check("t1", meta(token), query("3", "fay")));
    expect(again.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(again.log).toEqual([]);
  });

  it("a followed tenant: a deleted tuple the replica's rows is gone at the token and there at an older snap", async () => {
    const { db, writer, request, isolate } = await setUp();
    const { service } = await isolate();
    await request(() => service.check("t1", meta(), query("1", "ann")));
    const { result: before } = await request(() =>
      writer.writeData("t1", "", [tuple("doc:2", "viewer", "user:eve")], []),
    );
    await db.catchUp();
    const { result: token } = await request(() =>
      writer.deleteData(
        "t1",
        { entity: { type: "team", ids: ["a"] }, relation: "member", subject: { type: "user", ids: ["ann"] } },
        {},
      ),
    );
    const fresh = await request(() => service.check("t1", meta(token), query("1", "ann")));
    expect(fresh.result.can).toBe("CHECK_RESULT_DENIED");
    expect(trips(fresh.log).filter((t) => t === "primary")).toHaveLength(1);
    const older = await request(() => service.check("t1", meta(before), query("1", "ann")));
    expect(older.result.can).toBe("CHECK_RESULT_ALLOWED");
  });

  it("property: a fresh token's check at a lagging replica equals the primary's answer; nothing at the primary once the replica has the writes", async () => {
    const { db, writer, request, isolate } = await setUp(ATTRIBUTE_SCHEMA);
    const { replica, service } = await isolate();
    const reference = new PembaService(await D1Store.open(new LaggingReplicaD1(env.DB), { migrate: false }));
    await request(() => service.check("t1", meta(), query("1", "ann"))); // the tenant followed, the schema cached
    let seed = 19;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const pick = <T>(xs: readonly T[]) => xs[random(xs.length)]!;
    const docs = ["1", "2", "3"];
    const teams = ["a", "b"];
    const users = ["ann", "bob", "cy"];
    const hour = 3_600_000;
    let checked = 0;
    let laidOver = 0;
    for (let round = 0; round < 30; round++) {
      let token = "";
      for (let w = 1 + random(3); w > 0; w--) {
        const doc = pick(docs);
        const user = pick(users);
        const team = pick(teams);
        const expiresAt = random(3) === 0 ? Date.now() + (1 + random(2)) * hour : undefined;
        const op = random(7);
        const { result } = await request(() => {
          if (op === 0)
            return writer.writeData(
              "t1",
              "",
              [{ ...tuple(`doc:${doc}`, "viewer", `user:${user}`), expiresAt }],
              [],
            );
          if (op === 1) return writer.writeData("t1", "", [tuple(`doc:${doc}`, "team", `team:${team}`)], []);
          if (op === 2)
            return writer.writeData(
              "t1",
              "",
              [{ ...tuple(`team:${team}`, "member", `user:${user}`), expiresAt }],
              [],
            );
          if (op === 3) {
            const open = { type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data: random(2) === 0 };
            return writer.writeData(
              "t1",
              "",
              [],
              [{ entity: { type: "doc", id: doc }, attribute: "open", value: open }],
            );
          }
          if (op === 4)
            return writer.deleteData("t1", {}, { entity: { type: "doc", ids: [doc] }, attributes: ["open"] });
          if (op === 5)
            return writer.deleteData(
              "t1",
              {
                entity: { type: "team", ids: [team] },
                relation: "member",
                subject: { type: "user", ids: [user] },
              },
              {},
            );
          return writer.deleteData("t1", { entity: { type: "doc", ids: [doc] }, relation: "viewer" }, {});
        });
        if (result !== "") token = result;
      }
      // the replica takes some of the writes (maybe none, maybe all)
      await db.catchUp(random(db.behind + 1));
      if (token === "") continue;
      for (let c = 0; c < 3; c++) {
        const q = query(pick(docs), pick(users));
        const fresh = await request(() => service.check("t1", meta(token), q));
        const expected = await reference.check("t1", meta(), q);
        expect(fresh.result.can, `round ${round}: doc:${q.entity.id} view user:${q.subject.id}`).toBe(
          expected.can,
        );
        const atPrimary = trips(fresh.log).filter((t) => t === "primary").length;
        // the look and the feed in one batch, and at times a cold key read at the token's snap (the replica lacks
        // the write); none while the replica has every write
        expect(atPrimary).toBeLessThanOrEqual(db.behind > 0 ? 2 : 0);
        if (atPrimary === 1) laidOver++;
        checked++;
      }
      // lookups read subjects' tuples (laid over too) and object ids (in the request's own session)
      const user = { type: "user", id: pick(users), relation: "" };
      const entities = { entityType: "doc", permission: "view", subject: user, pageSize: 100 };
      const { result: found } = await request(() => service.lookupEntity("t1", meta(token), entities));
      const expected = await reference.lookupEntity("t1", meta(), entities);
      expect(found.entityIds.sort(), `round ${round}: lookup-entity`).toEqual(expected.entityIds.sort());
      const subjects = {
        entity: { type: "doc", id: pick(docs) },
        permission: "view",
        subjectReference: { type: "user", relation: "" },
        pageSize: 100,
      };
      const { result: who } = await request(() => service.lookupSubject("t1", meta(token), subjects));
      const expectedWho = await reference.lookupSubject("t1", meta(), subjects);
      expect(who.subjectIds.sort(), `round ${round}: lookup-subject`).toEqual(expectedWho.subjectIds.sort());
    }
    expect(replica.holds("t1")).toBe(true);
    expect(checked).toBeGreaterThan(60);
    expect(laidOver).toBeGreaterThan(20);
  });
});
