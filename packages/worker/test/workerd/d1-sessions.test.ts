/**
 * D1 Sessions routing, on two real local D1 databases: a primary and a replica fed late (lagging-replica.ts).
 * Each simulated request gets its own D1Sessions, as the Worker gives each request its own.
 */
import { env } from "cloudflare:test";
import { D1Sessions, D1Store, decodeSnapTokenWithBookmark, PembaService } from "@pemba/core";
import { beforeEach, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";
import { LaggingReplicaD1 } from "./lagging-replica.ts";

const SCHEMA = `entity user {}
entity doc {
  relation viewer @user
  permission view = viewer
}`;
const viewer = (doc: string, user: string) => ({
  entity: { type: "doc", id: doc },
  relation: "viewer",
  subject: { type: "user", id: user, relation: "" },
});
const query = (doc: string, user: string) => ({
  entity: { type: "doc", id: doc },
  permission: "view",
  subject: { type: "user", id: user, relation: "" },
});

beforeEach(async () => {
  await emptyDatabase(env.DB);
  await emptyDatabase(env.REPLICA);
});

async function setUp() {
  const db = new LaggingReplicaD1(env.DB, env.REPLICA);
  let current = new D1Sessions(db);
  const store = await D1Store.open(db, { sessions: () => current });
  const service = new PembaService(store);
  /** A service with nothing cached (a new isolate): its first read of a request is the schema. */
  const coldService = () => new PembaService(store);
  /** Runs `work` as one request: fresh sessions, and only its statements in the returned log. */
  const request = async <T>(work: () => Promise<T> | T) => {
    current = new D1Sessions(db);
    const from = db.log.length;
    const result = await work();
    return { result, log: db.log.slice(from) };
  };
  await request(() => service.writeSchema("t1", SCHEMA));
  await db.catchUp();
  return { db, service, coldService, request };
}

describe("D1 sessions", () => {
  it("a write goes to the primary and its snap token carries the primary's bookmark", async () => {
    const { service, request } = await setUp();
    const { result: token, log } = await request(() =>
      service.writeData("t1", "", [viewer("1", "alice")], []),
    );
    expect(log.map((s) => s.target)).toEqual(log.map(() => "primary"));
    // the primary's 4th write: migration table, migrations, schema, this one
    expect(decodeSnapTokenWithBookmark(token)).toEqual({ snap: 1, bookmark: "00000004" });
  });

  it("a read with a write's token is never answered by the lagging replica; without a token, no primary traffic", async () => {
    const { db, service, request } = await setUp();
    const { result: token } = await request(() => service.writeData("t1", "", [viewer("1", "alice")], []));

    // the replica has not seen the write yet
    const withToken = await request(() =>
      service.check("t1", { schemaVersion: "", snapToken: token, depth: 10 }, query("1", "alice")),
    );
    expect(withToken.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(withToken.log.length).toBeGreaterThan(0);
    expect(withToken.log.filter((s) => s.target === "replica")).toEqual([]);

    const withoutToken = await request(() =>
      service.check("t1", { schemaVersion: "", snapToken: "", depth: 10 }, query("1", "alice")),
    );
    expect(withoutToken.result.can).toBe("CHECK_RESULT_DENIED");
    expect(withoutToken.log.length).toBeGreaterThan(0);
    expect(withoutToken.log.filter((s) => s.target === "primary")).toEqual([]);

    // once the replica has the write, the token's reads go to the replica too
    await db.catchUp();
    const caughtUp = await request(() =>
      service.check("t1", { schemaVersion: "", snapToken: token, depth: 10 }, query("1", "alice")),
    );
    expect(caughtUp.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(caughtUp.log.filter((s) => s.target === "primary")).toEqual([]);
    const tokenless = await request(() =>
      service.check("t1", { schemaVersion: "", snapToken: "", depth: 10 }, query("1", "alice")),
    );
    expect(tokenless.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(tokenless.log.filter((s) => s.target === "primary")).toEqual([]);
  });

  it("a revoke's token is never answered from a replica that still has the grant", async () => {
    const { db, service, request } = await setUp();
    await request(() => service.writeData("t1", "", [viewer("1", "alice")], []));
    await db.catchUp();
    const { result: revoked } = await request(() =>
      service.deleteRelationships("t1", { entity: { type: "doc", ids: ["1"] }, relation: "viewer" }),
    );
    const reads = await request(() =>
      service.readRelationships("t1", revoked, { entity: { type: "doc" } }, 10, ""),
    );
    expect(reads.result.items).toEqual([]);
    expect(reads.log.map((s) => s.target)).toEqual(reads.log.map(() => "primary"));
    const check = await request(() =>
      service.check("t1", { schemaVersion: "", snapToken: revoked, depth: 10 }, query("1", "alice")),
    );
    expect(check.result.can).toBe("CHECK_RESULT_DENIED");
    // an old token (no bookmark, as every token before D1) still decodes and reads the replica
    const old = await request(() =>
      service.check("t1", { schemaVersion: "", snapToken: "AQAAAAAAAAA=", depth: 10 }, query("1", "alice")),
    );
    expect(old.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(old.log.filter((s) => s.target === "primary")).toEqual([]);
  });

  it("a token still wins in a request with nothing cached (a new isolate)", async () => {
    const { db, service, coldService, request } = await setUp();
    const { result: token } = await request(() => service.writeData("t1", "", [viewer("1", "alice")], []));
    const cold = await request(() =>
      coldService().check("t1", { schemaVersion: "", snapToken: token, depth: 10 }, query("1", "alice")),
    );
    expect(cold.result.can).toBe("CHECK_RESULT_ALLOWED");
    expect(cold.log.some((s) => s.sql.includes('FROM "schemas"'))).toBe(true);
    expect(cold.log.filter((s) => s.target === "replica")).toEqual([]);
    await db.catchUp();
  });

  it("a bookmark given after the request's first read reopens its read session at the bookmark", async () => {
    const { service, request } = await setUp();
    const db = new LaggingReplicaD1(env.DB, env.REPLICA);
    const { result: token } = await request(() => service.writeData("t1", "", [viewer("1", "alice")], []));
    const bookmark = decodeSnapTokenWithBookmark(token).bookmark as string;
    const sessions = new D1Sessions(db);
    await sessions.reader().prepare("SELECT 1 AS one").all();
    sessions.readAfter(bookmark);
    const rows = await sessions.reader().prepare("SELECT count(*) AS n FROM tuples").all();
    expect(rows.results).toEqual([{ n: 1 }]);
    expect(db.log.map((s) => s.target)).toEqual(["replica", "primary"]);
  });
});
