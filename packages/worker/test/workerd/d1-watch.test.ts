/**
 * A watch stream on D1 meets D1's cap of queries per Worker invocation (every read and every poll is a query): it
 * ends cleanly after its last full batch instead of failing mid-stream, and a client reconnecting with the last
 * snap token misses nothing. The cap is lowered to 8 queries so the test reaches it quickly.
 */
import { env } from "cloudflare:test";
import type { WatchBatch } from "@pemba/core";
import {
  createApp,
  D1Sessions,
  D1Store,
  decodeSnapTokenWithBookmark,
  PembaService,
  ReplicaStore,
} from "@pemba/core";
import { beforeEach, describe, expect, it } from "vitest";
import { emptyDatabase } from "./d1-database.ts";

const CAP = 8;
const WRITES = 12;
const SCHEMA = `entity user {}
entity doc {
  relation viewer @user
}`;
const viewer = (doc: number) => ({
  entity: { type: "doc", id: String(doc) },
  relation: "viewer",
  subject: { type: "user", id: "u", relation: "" },
});

beforeEach(async () => {
  await emptyDatabase(env.DB);
});

async function collect(stream: AsyncGenerator<WatchBatch>): Promise<WatchBatch[]> {
  const batches: WatchBatch[] = [];
  for await (const batch of stream) batches.push(batch);
  return batches;
}

describe.each([
  ["D1", false],
  ["the in-isolate replica over D1", true],
])("watch on %s under a per-invocation query cap", (_name, replica) => {
  it("each connection ends after its last full batch within the cap; reconnecting from the last token gets the rest, once each", async () => {
    let current = new D1Sessions(env.DB);
    const d1 = await D1Store.open(env.DB, { sessions: () => current });
    const store = replica ? ReplicaStore.lazy(d1, { freshnessMs: 0 }) : d1;
    const service = new PembaService(store);
    await service.writeSchema("t1", SCHEMA);
    const start = await service.writeData("t1", "", [viewer(0)], []);
    const written: string[] = [];
    for (let i = 1; i <= WRITES; i++) written.push(await service.writeData("t1", "", [viewer(i)], []));

    const received: WatchBatch[] = [];
    const perConnection: number[] = [];
    let from = start;
    for (let connection = 0; connection < 10; connection++) {
      current = new D1Sessions(env.DB, CAP); // a new Worker invocation
      const batches = await collect(await service.watch("t1", from, { batch: 1, pollMs: 5 }));
      expect(current.queries).toBeLessThanOrEqual(CAP);
      perConnection.push(batches.length);
      received.push(...batches);
      if (batches.length === 0) break;
      from = batches[batches.length - 1].snapToken;
    }
    // without the budget check the first connection fails at its ninth query
    expect(perConnection[0]).toBeGreaterThan(0);
    expect(perConnection[0]).toBeLessThan(WRITES);
    expect(perConnection.at(-1)).toBe(0);
    const snap = (token: string) => decodeSnapTokenWithBookmark(token).snap;
    expect(received.map((b) => snap(b.snapToken))).toEqual(written.map(snap));
    expect(received.map((b) => b.changes.map((c) => c.tuple?.entity.id))).toEqual(
      written.map((_, i) => [String(i + 1)]),
    );
  });
});

describe("watch over HTTP on D1 under a per-invocation query cap", () => {
  it("the NDJSON response completes after its last full line, without an error line; reconnecting resumes after it", async () => {
    let current = new D1Sessions(env.DB);
    const store = await D1Store.open(env.DB, { sessions: () => current });
    const service = new PembaService(store);
    const app = createApp({ service, watchPollMs: 5 });
    await service.writeSchema("t1", SCHEMA);
    const start = await service.writeData("t1", "", [viewer(0)], []);
    // a read takes up to 100 change sets (the route's batch): enough transactions to need more reads than fit
    const writes = 250;
    for (let i = 1; i <= writes; i++) {
      current = new D1Sessions(env.DB); // each write its own invocation
      await service.writeData("t1", "", [viewer(i)], []);
    }

    const watch = async (from: string) => {
      current = new D1Sessions(env.DB, 5); // a new Worker invocation
      const res = await app.fetch(
        new Request("http://pemba.test/v1/tenants/t1/watch", {
          method: "POST",
          body: JSON.stringify({ snap_token: from }),
        }),
      );
      expect(res.status).toBe(200);
      const text = await res.text(); // resolves only when the stream ends
      expect(text === "" || text.endsWith("\n")).toBe(true);
      return text
        .split("\n")
        .filter((l) => l !== "")
        .map(
          (l) =>
            JSON.parse(l) as {
              changes: { snap_token: string; data_changes: { tuple: { entity: { id: string } } }[] };
            },
        );
    };
    const first = await watch(start);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(writes);
    const second = await watch(first[first.length - 1].changes.snap_token);
    const ids = [...first, ...second].map((l) => l.changes.data_changes.map((c) => c.tuple.entity.id));
    expect(ids.slice(0, first.length + second.length)).toEqual(
      Array.from({ length: first.length + second.length }, (_, i) => [String(i + 1)]),
    );
  });
});
