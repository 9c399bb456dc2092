/**
 * Several `pemba serve` instances on one PostgreSQL: each answers checks from its own replica, and learns
 * of the others' writes through LISTEN/NOTIFY. Requests are routed to a random instance, as a load balancer would.
 */
import { type PostgresServer, startPostgres } from "@pemba/core/testing/node";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../src/index.ts";
import { checkBody, post, tuple, writeSchema } from "./api-client.ts";

let pg: PostgresServer;
const servers: RunningServer[] = [];

beforeAll(async () => {
  pg = await startPostgres();
  // one after the other: the first migrates the database
  for (let i = 0; i < 3; i++) {
    servers.push(
      await startServer({
        database: pg.url,
        host: "127.0.0.1",
        port: 0,
        // the replica's timer never runs: what an instance learns of the others' writes comes from notices
        replicaRefreshMs: 0,
        logger: pino({ level: "silent" }),
      }),
    );
  }
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await pg?.stop();
});

const any = () => servers[Math.floor(Math.random() * servers.length)]!.url;

async function data(url: string, path: string, body: Record<string, unknown>): Promise<string> {
  const r = await post(url, `/v1/tenants/t1/${path}`, body);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.snap_token as string;
}

async function can(url: string, doc: number, user: number, snapToken = ""): Promise<string> {
  const body = checkBody(`document:${doc}`, "view", `user:${user}`);
  const r = await post(url, "/v1/tenants/t1/permissions/check", {
    ...body,
    metadata: { ...body.metadata, snap_token: snapToken },
  });
  if (r.status !== 200) throw new Error(`check: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.can as string;
}

describe("three instances on one PostgreSQL, requests routed at random", () => {
  it("with the write's snap token every answer is current: 0 stale answers", async () => {
    await writeSchema(any());
    let stale = 0;
    let answers = 0;
    const tokens = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const granted = await data(any(), "data/write", {
        metadata: { schema_version: "" },
        tuples: [tuple(`document:${i}`, "viewer", `user:${i}`)],
      });
      for (const s of servers) {
        answers++;
        if ((await can(s.url, i, i, granted)) !== "CHECK_RESULT_ALLOWED") stale++;
      }
      const revoked = await data(any(), "relationships/delete", {
        filter: {
          entity: { type: "document", ids: [String(i)] },
          relation: "viewer",
          subject: { type: "user", ids: [String(i)] },
        },
      });
      for (const s of servers) {
        answers++;
        if ((await can(s.url, i, i, revoked)) !== "CHECK_RESULT_DENIED") stale++;
      }
      tokens.add(granted).add(revoked);
    }
    expect(tokens.size).toBe(80); // every write its own snap
    expect(answers).toBe(240);
    expect(stale).toBe(0);
  });

  it("without a token, the other instances see a write through LISTEN/NOTIFY (their replica timers are off)", async () => {
    await writeSchema(servers[0]!.url);
    await data(servers[0]!.url, "data/write", {
      metadata: { schema_version: "" },
      tuples: [tuple("document:900", "viewer", "user:900")],
    });
    for (const s of servers.slice(1)) {
      const deadline = Date.now() + 10_000;
      let answer = await can(s.url, 900, 900);
      while (answer !== "CHECK_RESULT_ALLOWED" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 5));
        answer = await can(s.url, 900, 900);
      }
      expect(answer).toBe("CHECK_RESULT_ALLOWED");
    }
  });
});
