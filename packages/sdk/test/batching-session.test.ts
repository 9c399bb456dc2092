/**
 * Automatic check batching and session consistency against a real `pemba serve`, with a fetch that records
 * every request the client sends.
 */

import { type ScratchServer, startScratchServe } from "@pemba/node-server/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, PembaApiError } from "../src/index.ts";
import { recordingFetch, SCHEMA } from "./shared.ts";

const doc = (id: string) => ({ type: "document", id });
const user = (id: string) => ({ type: "user", id });
const BULK = "/v1/tenants/t1/permissions/bulk-check";
const CHECK = "/v1/tenants/t1/permissions/check";

describe("check batching and session consistency against pemba serve", () => {
  let server: ScratchServer;
  beforeAll(async () => {
    server = await startScratchServe();
    const setup = createClient({ baseUrl: server.url });
    await setup.writeSchema(SCHEMA);
    await setup.writeData({
      tuples: Array.from({ length: 50 }, (_, i) => ({
        entity: doc(`d${i}`),
        relation: "owner",
        subject: user("ann"),
      })),
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("250 checks of one tick go out as bulk checks of 100, 100 and 50, each caller getting its own answer", async () => {
    const rec = recordingFetch();
    const client = createClient({ baseUrl: server.url, fetch: rec.fetch });
    const ids = Array.from({ length: 250 }, (_, i) => `d${i}`);
    const answers = await Promise.all(
      ids.map((id) => client.check({ entity: doc(id), permission: "edit", subject: user("ann") })),
    );
    expect(answers.map((a) => a.can)).toEqual(
      ids.map((_, i) => (i < 50 ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED")),
    );
    expect(rec.calls.map((c) => c.path)).toEqual([BULK, BULK, BULK]);
    expect(rec.calls.map((c) => (c.body as { items: unknown[] }).items.length)).toEqual([100, 100, 50]);
    const first = rec.calls[0].body as { items: { entity: { id: string } }[]; metadata: unknown };
    expect(first.items[7].entity.id).toBe("d7");
    expect(first.metadata).toEqual({ schema_version: "", snap_token: "", depth: 20 });
  });

  it("a lone check is a plain check; checks with other metadata or a context are not merged", async () => {
    const rec = recordingFetch();
    const client = createClient({ baseUrl: server.url, fetch: rec.fetch });
    expect((await client.check({ entity: doc("d1"), permission: "edit", subject: user("ann") })).can).toBe(
      "CHECK_RESULT_ALLOWED",
    );
    expect(rec.calls.map((c) => c.path)).toEqual([CHECK]);
    rec.calls.length = 0;
    await Promise.all([
      client.check({ entity: doc("d1"), permission: "edit", subject: user("ann") }),
      client.check({ entity: doc("d2"), permission: "edit", subject: user("ann") }),
      client.check({ entity: doc("d3"), permission: "edit", subject: user("ann"), metadata: { depth: 10 } }),
      client.check({ entity: doc("d4"), permission: "edit", subject: user("bo"), context: { tuples: [] } }),
    ]);
    expect(rec.calls.map((c) => c.path).sort()).toEqual([BULK, CHECK, CHECK]);
  });

  it("an invalid item does not fail its batch: the batch is retried item by item, only that call rejects", async () => {
    const rec = recordingFetch();
    const client = createClient({ baseUrl: server.url, fetch: rec.fetch });
    const results = await Promise.allSettled([
      client.check({ entity: doc("d1"), permission: "edit", subject: user("ann") }),
      client.check({ entity: doc("d1"), permission: "not-a-name", subject: user("ann") }),
      client.check({ entity: doc("d99"), permission: "edit", subject: user("ann") }),
    ]);
    expect(results[0]).toMatchObject({ status: "fulfilled", value: { can: "CHECK_RESULT_ALLOWED" } });
    expect(results[1].status).toBe("rejected");
    const reason = (results[1] as PromiseRejectedResult).reason;
    expect(reason).toBeInstanceOf(PembaApiError);
    expect(reason).toMatchObject({
      status: 400,
      code: 3,
      message:
        'invalid PermissionCheckRequest.Permission: value does not match regex pattern "^[a-zA-Z_]{1,64}$"',
    });
    expect(results[2]).toMatchObject({ status: "fulfilled", value: { can: "CHECK_RESULT_DENIED" } });
    expect(rec.calls.map((c) => c.path)).toEqual([BULK, CHECK, CHECK, CHECK]);
  });

  it("batched checks keep bulk-check's answer for engine errors: an unknown type is DENIED, alone it is a 404", async () => {
    const client = createClient({ baseUrl: server.url });
    const [known, unknown] = await Promise.all([
      client.check({ entity: doc("d1"), permission: "edit", subject: user("ann") }),
      client.check({ entity: { type: "nope", id: "1" }, permission: "edit", subject: user("ann") }),
    ]);
    expect(known.can).toBe("CHECK_RESULT_ALLOWED");
    expect(unknown).toEqual({ can: "CHECK_RESULT_DENIED", metadata: { check_count: 1 } });
    await expect(
      client.check({ entity: { type: "nope", id: "1" }, permission: "edit", subject: user("ann") }),
    ).rejects.toMatchObject({ status: 404, errorCode: "ERROR_CODE_SCHEMA_NOT_FOUND" });
  });

  it("batchChecks: false sends one request per check; maxItems caps the batch", async () => {
    const rec = recordingFetch();
    const plain = createClient({ baseUrl: server.url, fetch: rec.fetch, batchChecks: false });
    await Promise.all(
      [1, 2, 3].map((i) => plain.check({ entity: doc(`d${i}`), permission: "edit", subject: user("ann") })),
    );
    expect(rec.calls.map((c) => c.path)).toEqual([CHECK, CHECK, CHECK]);
    rec.calls.length = 0;
    const small = createClient({ baseUrl: server.url, fetch: rec.fetch, batchChecks: { maxItems: 2 } });
    await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        small.check({ entity: doc(`d${i}`), permission: "edit", subject: user("ann") }),
      ),
    );
    expect(rec.calls.map((c) => c.path)).toEqual([BULK, BULK, CHECK]);
  });

  it("session consistency: reads after a write carry that write's snap token; default mode sends none", async () => {
    const rec = recordingFetch();
    const session = createClient({ baseUrl: server.url, fetch: rec.fetch, consistency: "session" });
    await session.check({ entity: doc("s1"), permission: "edit", subject: user("sam") });
    expect((rec.calls[0].body as { metadata: { snap_token: string } }).metadata.snap_token).toBe("");
    const w1 = await session.writeData({
      tuples: [{ entity: doc("s1"), relation: "owner", subject: user("sam") }],
    });
    expect(session.lastWriteToken).toBe(w1.snap_token);
    expect(await session.can(doc("s1"), "edit", user("sam"))).toBe(true);
    await session.lookupEntity({ entity_type: "document", permission: "edit", subject: user("sam") });
    await session.readRelationships({ filter: { entity: { type: "document", ids: ["s1"] } } });
    const w2 = await session.deleteRelationships({ filter: { entity: { type: "document", ids: ["s1"] } } });
    expect(w2.snap_token).not.toBe(w1.snap_token);
    expect(await session.can(doc("s1"), "edit", user("sam"))).toBe(false);
    // An explicit token wins over the session's.
    expect(await session.can(doc("s1"), "edit", user("sam"), undefined, {})).toBe(false);
    await session.check({
      entity: doc("s1"),
      permission: "edit",
      subject: user("sam"),
      metadata: { snap_token: w1.snap_token },
    });
    const tokens = rec.calls
      .filter((c) => c.path.includes("/permissions/") || c.path.endsWith("/read"))
      .map((c) => (c.body as { metadata: { snap_token: string } }).metadata.snap_token);
    expect(tokens).toEqual([
      "",
      w1.snap_token,
      w1.snap_token,
      w1.snap_token,
      w2.snap_token,
      w2.snap_token,
      w1.snap_token,
    ]);

    rec.calls.length = 0;
    const plain = createClient({ baseUrl: server.url, fetch: rec.fetch });
    await plain.writeData({ tuples: [{ entity: doc("s2"), relation: "owner", subject: user("sam") }] });
    await plain.check({ entity: doc("s2"), permission: "edit", subject: user("sam") });
    expect((rec.calls[1].body as { metadata: { snap_token: string } }).metadata.snap_token).toBe("");
  });
});
