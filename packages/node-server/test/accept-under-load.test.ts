/**
 * A new connection is served while established keep-alive clients keep the server saturated.
 *
 * libuv accepts one connection per event-loop turn, so how long a connection waits in the accept queue is its
 * position times the length of a turn. Before the turn budget (src/turn-budget.ts) a turn ran every ready request:
 * with B busy clients each turn answered all B, and M new connections were answered only after about M x B busy
 * answers (the zitadel soak's 5-60 s waits). The test counts answers, not time: B clients loop on requests that
 * each cost more than the budget (a lookup over DOCS documents), then M new connections send one request each; the
 * busy answers sent before the last new connection is answered must stay below 3 x B (before: about M x B).
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, startServe } from "../src/testing/cli-process.ts";
import { post, TEST_SCHEMA, writeSchema } from "./api-client.ts";

const BUSY = 30;
const NEW = 10;
const DOCS = 20_000;

const LOOKUP = JSON.stringify({
  metadata: { depth: 20 },
  entity_type: "document",
  permission: "view",
  subject: { type: "user", id: "alice", relation: "" },
  page_size: 1000,
});

function lookup(url: string, agent: http.Agent | false): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/v1/tenants/t1/permissions/lookup-entity`,
      { method: "POST", agent, headers: { "content-type": "application/json" } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(LOOKUP);
  });
}

describe("accepting connections under a saturating load", () => {
  let server: CliProcess & { url: string };

  beforeAll(async () => {
    server = await startServe(["--database", "memory:"]);
    await writeSchema(server.url, TEST_SCHEMA);
    for (let start = 0; start < DOCS; start += 1000) {
      const tuples = Array.from({ length: 1000 }, (_, i) => ({
        entity: { type: "document", id: String(start + i) },
        relation: "viewer",
        subject: { type: "user", id: "alice", relation: "" },
      }));
      const r = await post(server.url, "/v1/tenants/t1/data/write", { metadata: {}, tuples });
      expect(r.status).toBe(200);
    }
  }, 60_000);

  afterAll(async () => {
    server?.child.kill("SIGTERM");
    await server?.exited;
  });

  it(`${NEW} new connections are answered before the ${BUSY} busy clients got 3 answers each`, async () => {
    let busyAnswers = 0;
    let stop = false;
    const agents = Array.from({ length: BUSY }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    const loops = agents.map(async (agent) => {
      while (!stop) {
        expect(await lookup(server.url, agent)).toBe(200);
        busyAnswers++;
      }
    });
    try {
      // every busy client connected and answered: the load is steady
      while (busyAnswers < 2 * BUSY) await new Promise((r) => setTimeout(r, 5));
      const before = busyAnswers;
      const statuses = await Promise.all(Array.from({ length: NEW }, () => lookup(server.url, false)));
      const busyMeanwhile = busyAnswers - before;
      expect(statuses).toEqual(Array(NEW).fill(200));
      expect(busyMeanwhile).toBeLessThan(3 * BUSY);
    } finally {
      stop = true;
      await Promise.all(loops);
      for (const agent of agents) agent.destroy();
    }
  }, 120_000);
});
