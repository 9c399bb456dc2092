/**
 * Tenants over several D1 databases, inside workerd on three local D1 databases (DB, DB2, DB3): the Worker's own
 * wiring (openWorker: config, D1 bindings, ShardedStore, a replica per database) driven over its HTTP API. Each
 * tenant's rows are in the database its placement names (a pin, else rendezvous hashing); tenant create, list and
 * delete span the three; snap tokens name their database and one of another database is refused; an empty tenant
 * follows a changed pin, a tenant with data stays and its requests say why.
 */
import { env } from "cloudflare:test";
import type { D1Database } from "@pemba/core";
import {
  decodeSnapTokenWithBookmark,
  encodeSnapToken,
  ReplicaStore,
  rendezvous,
  ShardedStore,
} from "@pemba/core";
import { beforeEach, describe, expect, it } from "vitest";
import { openWorker } from "../../src/handler.ts";
import { checkBody, DATA, SCHEMA } from "../fixtures.ts";
import { emptyDatabase } from "./d1-database.ts";

const BINDINGS = ["DB", "DB2", "DB3"] as const;
type Binding = (typeof BINDINGS)[number];
const databases: Record<Binding, D1Database> = { DB: env.DB, DB2: env.DB2, DB3: env.DB3 };
const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} };

beforeEach(async () => {
  for (const db of Object.values(databases)) await emptyDatabase(db);
});

/** A Worker over the three databases (or the ones listed), with these pins. */
async function worker(pins = "", database = `d1:${BINDINGS.join(",")}`) {
  const vars = { PEMBA_DATABASE: database, ...(pins ? { PEMBA_D1_TENANTS: pins } : {}) };
  const pemba = await openWorker({ ...vars, ...databases });
  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { "content-type": "application/json" } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await pemba.fetch(new Request(`http://worker.test${path}`, init), vars, ctx);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return { pemba, call, post: (path: string, body: unknown) => call("POST", path, body) };
}

/** The tenant ids each database holds, read with SQL. */
async function tenantsIn(): Promise<Record<Binding, string[]>> {
  const out = {} as Record<Binding, string[]>;
  for (const b of BINDINGS) {
    const { results } = await databases[b].prepare("SELECT id FROM tenants ORDER BY id").all();
    out[b] = results.map((r) => r.id as string);
  }
  return out;
}

const home = (tenant: string) => rendezvous(BINDINGS, tenant) as Binding;
/** A tenant name that hashes to `binding`. */
const nameOn = (binding: Binding, prefix: string) => {
  for (let i = 0; ; i++) if (home(`${prefix}-${i}`) === binding) return `${prefix}-${i}`;
};
const check = (subject: string, snapToken = "") => {
  const body = checkBody("document:1", "edit", subject);
  return { ...body, metadata: { ...body.metadata, snap_token: snapToken } };
};

async function seed(
  post: (path: string, body: unknown) => Promise<{ status: number; body: Record<string, unknown> }>,
  tenant: string,
) {
  expect((await post("/v1/tenants/create", { id: tenant, name: tenant })).status).toBe(200);
  expect((await post(`/v1/tenants/${tenant}/schemas/write`, { schema: SCHEMA })).status).toBe(200);
  const write = await post(`/v1/tenants/${tenant}/data/write`, DATA);
  expect(write.status).toBe(200);
  return write.body.snap_token as string;
}

describe("tenants over three D1 databases", () => {
  it("puts each tenant's rows in the database its placement names, and answers its checks from there", async () => {
    const tenants = [
      "acme",
      "globex",
      "initech",
      "umbrella",
      "hooli",
      "stark",
      "wayne",
      "tyrell",
      "cyberdyne",
    ];
    const pinned = tenants.find((t) => home(t) !== "DB3")!;
    const w = await worker(`${pinned}=DB3`);
    expect(w.pemba.store).toBeInstanceOf(ShardedStore);
    for (const t of tenants) await seed(w.post, t);
    const where = (t: string): Binding => (t === pinned ? "DB3" : home(t));
    // every database is used, and each tenant (schema, tuples, attributes) is on its own only
    expect(new Set(tenants.map(where))).toEqual(new Set(BINDINGS));
    const held = await tenantsIn();
    for (const b of BINDINGS) {
      // "t1" is every database's seed tenant (Permify's default)
      expect(held[b]).toEqual(["t1", ...tenants.filter((t) => where(t) === b)].sort());
      const { results } = await databases[b]
        .prepare("SELECT DISTINCT tenant_id AS t FROM tuples ORDER BY t")
        .all();
      expect(results.map((r) => r.t as string)).toEqual(tenants.filter((t) => where(t) === b).sort());
    }
    for (const t of tenants) {
      expect((await w.post(`/v1/tenants/${t}/permissions/check`, check("user:1"))).body.can).toBe(
        "CHECK_RESULT_ALLOWED",
      );
      expect((await w.post(`/v1/tenants/${t}/permissions/check`, check("user:3"))).body.can).toBe(
        "CHECK_RESULT_DENIED",
      );
    }
    // a replica in front of each database: the tenants checked are held by their own database's copy only
    const shards = (w.pemba.store as ShardedStore).shards;
    for (const t of tenants) {
      for (const b of BINDINGS) expect((shards.get(b) as ReplicaStore).holds(t)).toBe(b === where(t));
    }
  });

  it("create refuses a tenant any database has; list merges and pages by id; delete removes it wherever it is", async () => {
    const w = await worker();
    const ids = Array.from({ length: 7 }, (_, i) => `tenant-${i}`);
    for (const id of ids) expect((await w.post("/v1/tenants/create", { id, name: id })).status).toBe(200);
    // a tenant on a database it does not hash to (e.g. left there by a pin since removed)
    const stray = nameOn("DB2", "stray");
    await databases.DB3.prepare("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)")
      .bind(stray, stray, Date.now())
      .all();
    const again = await w.post("/v1/tenants/create", { id: stray, name: stray });
    expect(again).toEqual({
      status: 400,
      body: { code: 3, message: "ERROR_CODE_ALREADY_EXIST", details: [] },
    });
    expect((await tenantsIn()).DB2).not.toContain(stray);

    // pages of 3 over all databases, in id order, each tenant once ("t1" is on all three)
    const all = [...ids, stray, "t1"].sort();
    const seen: string[][] = [];
    let token = "";
    do {
      const page = await w.post("/v1/tenants/list", { page_size: 3, continuous_token: token });
      expect(page.status).toBe(200);
      seen.push((page.body.tenants as { id: string }[]).map((t) => t.id));
      token = page.body.continuous_token as string;
    } while (token !== "");
    expect(seen).toEqual([all.slice(0, 3), all.slice(3, 6), all.slice(6, 9)]);
    // the same pages again (deterministic)
    const first = await w.post("/v1/tenants/list", { page_size: 3 });
    expect((first.body.tenants as { id: string }[]).map((t) => t.id)).toEqual(all.slice(0, 3));

    // delete finds the stray on DB3, and "t1" on all three
    expect(await w.call("DELETE", `/v1/tenants/${stray}`)).toEqual({
      status: 200,
      body: { tenant_id: stray },
    });
    expect(await w.call("DELETE", "/v1/tenants/t1")).toEqual({ status: 200, body: { tenant_id: "t1" } });
    const held = await tenantsIn();
    expect([...held.DB, ...held.DB2, ...held.DB3].sort()).toEqual(ids);
    expect((await w.call("DELETE", `/v1/tenants/${stray}`)).status).toBe(404);
  });

  it("snap tokens name their database: refused for a tenant on another one, Permify's form on the first", async () => {
    const w = await worker();
    const onFirst = nameOn("DB", "first");
    const onDb2 = nameOn("DB2", "second");
    const onDb3 = nameOn("DB3", "third");
    const tokens: Record<string, string> = {};
    for (const t of [onFirst, onDb2, onDb3]) tokens[t] = await seed(w.post, t);
    expect(decodeSnapTokenWithBookmark(tokens[onDb2]!)).toMatchObject({ database: "DB2" });
    expect(decodeSnapTokenWithBookmark(tokens[onDb3]!)).toMatchObject({ database: "DB3" });
    // the first database's tokens carry no name: 8 snap bytes and D1's bookmark, as with one database
    const first = decodeSnapTokenWithBookmark(tokens[onFirst]!);
    expect(first.database).toBeUndefined();
    expect(tokens[onFirst]).toBe(encodeSnapToken(first.snap, first.bookmark));

    // each tenant's own token reads; another database's token is refused (Permify's code for a bad snap token)
    for (const t of [onFirst, onDb2, onDb3]) {
      const own = await w.post(`/v1/tenants/${t}/permissions/check`, check("user:1", tokens[t]));
      expect(own.body.can).toBe("CHECK_RESULT_ALLOWED");
    }
    const refused = (tenant: string, token: string) =>
      w.post(`/v1/tenants/${tenant}/permissions/check`, check("user:1", token));
    expect(await refused(onFirst, tokens[onDb2]!)).toEqual({
      status: 400,
      body: {
        code: 3,
        message: `snap token of database DB2, but tenant ${onFirst} lives on the first database: a snap token is only valid for the database it was minted on`,
        details: [],
      },
    });
    expect((await refused(onDb2, tokens[onFirst]!)).body.message).toBe(
      `snap token of the first database, but tenant ${onDb2} lives on database DB2: a snap token is only valid for the database it was minted on`,
    );
    expect((await refused(onDb3, tokens[onDb2]!)).body.message).toMatch(
      /^snap token of database DB2, but tenant/,
    );
    // reads and watch take the same check; a read's token names the database too
    const read = await w.post(`/v1/tenants/${onDb3}/data/relationships/read`, {
      metadata: { snap_token: tokens[onDb2] },
      filter: { entity: { type: "document", ids: [] } },
    });
    expect(read.status).toBe(400);
    // a watch from a token: refused for another database's, and its lines name the tenant's database
    const watchRefused = await w.post(`/v1/tenants/${onDb3}/watch`, { snap_token: tokens[onDb2] });
    expect(watchRefused.status).toBe(400);
    expect(JSON.stringify(watchRefused.body)).toContain(
      `snap token of database DB2, but tenant ${onDb3} lives on`,
    );
    const abort = new AbortController();
    const from = encodeSnapToken(0, undefined, "DB3");
    const stream = await w.pemba.service.watch(onDb3, from, { signal: abort.signal, pollMs: 5 });
    const batch = await stream.next();
    abort.abort();
    expect(batch.done).toBe(false);
    expect(decodeSnapTokenWithBookmark(batch.value!.snapToken)).toEqual({
      snap: decodeSnapTokenWithBookmark(tokens[onDb3]!).snap,
      database: "DB3",
    });
    const deleted = await w.post(`/v1/tenants/${onDb3}/relationships/delete`, {
      filter: { entity: { type: "document", ids: ["1"] } },
    });
    expect(decodeSnapTokenWithBookmark(deleted.body.snap_token as string).database).toBe("DB3");
  });

  it("one database: tokens are Permify's (plus D1's bookmark) and no ShardedStore is in the way", async () => {
    const w = await worker("", "d1:DB");
    expect(w.pemba.store).toBeInstanceOf(ReplicaStore);
    const token = await seed(w.post, "solo");
    const decoded = decodeSnapTokenWithBookmark(token);
    expect(decoded.database).toBeUndefined();
    expect(token).toBe(encodeSnapToken(decoded.snap, decoded.bookmark));
    expect((await w.post("/v1/tenants/solo/permissions/check", check("user:1", token))).body.can).toBe(
      "CHECK_RESULT_ALLOWED",
    );
  });

  it("moving an empty tenant: change its pin and the tenant row follows on its next request", async () => {
    const mover = nameOn("DB", "mover");
    const before = await worker();
    expect((await before.post("/v1/tenants/create", { id: mover, name: "Mover Inc" })).status).toBe(200);
    expect((await tenantsIn()).DB).toContain(mover);

    // the operator pins it to DB3 (a new deployment: a new isolate); its first request moves the row
    const after = await worker(`${mover}=DB3`);
    expect((await after.post(`/v1/tenants/${mover}/schemas/write`, { schema: SCHEMA })).status).toBe(200);
    const held = await tenantsIn();
    expect(held.DB).not.toContain(mover);
    expect(held.DB3).toContain(mover);
    const { results } = await env.DB3.prepare("SELECT name FROM tenants WHERE id = ?").bind(mover).all();
    expect(results).toEqual([{ name: "Mover Inc" }]);
    const token = (await after.post(`/v1/tenants/${mover}/data/write`, DATA)).body.snap_token as string;
    expect(decodeSnapTokenWithBookmark(token).database).toBe("DB3");
    expect(
      (await after.post(`/v1/tenants/${mover}/permissions/check`, check("user:1", token))).body.can,
    ).toBe("CHECK_RESULT_ALLOWED");
    // a tenant listed once, on its new database
    const list = await after.post("/v1/tenants/list", { page_size: 10 });
    expect((list.body.tenants as { id: string }[]).filter((t) => t.id === mover)).toHaveLength(1);
  });

  it("adding a database: empty tenants whose hash picks it follow; one with data answers once pinned where it is", async () => {
    const two = ["DB", "DB2"];
    // tenants on DB or DB2 today that the hash puts on DB3 once it is listed
    const moving = (prefix: string) => {
      for (let i = 0; ; i++) {
        const id = `${prefix}-${i}`;
        if (home(id) === "DB3") return { id, now: rendezvous(two, id) as Binding };
      }
    };
    const empty = moving("quiet");
    const full = moving("loud");
    const stays = ["a", "b", "c", "d", "e", "f"].find((id) => home(id) !== "DB3")!;
    const before = await worker("", "d1:DB,DB2");
    expect((await before.post("/v1/tenants/create", { id: empty.id, name: empty.id })).status).toBe(200);
    await seed(before.post, full.id);
    await seed(before.post, stays);
    const { results } = await databases[empty.now]
      .prepare("SELECT id FROM tenants WHERE id = ?")
      .bind(empty.id)
      .all();
    expect(results).toEqual([{ id: empty.id }]);

    const after = await worker("", "d1:DB,DB2,DB3");
    expect((await after.post(`/v1/tenants/${empty.id}/schemas/write`, { schema: SCHEMA })).status).toBe(200);
    expect((await tenantsIn()).DB3).toEqual(["t1", empty.id].sort());
    expect((await after.post(`/v1/tenants/${stays}/permissions/check`, check("user:1"))).body.can).toBe(
      "CHECK_RESULT_ALLOWED",
    );
    const refused = await after.post(`/v1/tenants/${full.id}/permissions/check`, check("user:1"));
    expect(refused.status).toBe(500);
    expect(refused.body.message).toContain(`(${full.id}=${full.now} in PEMBA_D1_TENANTS)`);
    // the pin the message names (what scripts/placement.ts prints for it) serves it again
    const pinned = await worker(`${full.id}=${full.now}`, "d1:DB,DB2,DB3");
    expect((await pinned.post(`/v1/tenants/${full.id}/permissions/check`, check("user:1"))).body.can).toBe(
      "CHECK_RESULT_ALLOWED",
    );
  });

  it("a tenant with data does not move: its requests fail naming both databases and the pin, nothing changes", async () => {
    const busy = nameOn("DB2", "busy");
    const before = await worker();
    await seed(before.post, busy);
    const rows = async (db: D1Database) => {
      const { results } = await db
        .prepare("SELECT count(*) AS n FROM tuples WHERE tenant_id = ?")
        .bind(busy)
        .all();
      return results[0]!.n;
    };
    expect(await rows(env.DB2)).toBe(4);

    const moved = await worker(`${busy}=DB`);
    const message = `tenant ${busy} holds data on database DB2, but its placement is now DB: a tenant with data does not move; pin it where its data is (${busy}=DB2 in PEMBA_D1_TENANTS)`;
    const refused = { status: 500, body: { code: 13, message, details: [] } };
    expect(await moved.post(`/v1/tenants/${busy}/permissions/check`, check("user:1"))).toEqual(refused);
    expect(await moved.post(`/v1/tenants/${busy}/data/write`, DATA)).toEqual(refused);
    expect(await moved.post(`/v1/tenants/${busy}/schemas/write`, { schema: SCHEMA })).toEqual(refused);
    const held = await tenantsIn();
    expect(held.DB).not.toContain(busy);
    expect(held.DB2).toContain(busy);
    expect(await rows(env.DB2)).toBe(4);
    expect(await rows(env.DB)).toBe(0);

    // pinned where its data is, it answers again
    const pinned = await worker(`${busy}=DB2`);
    expect((await pinned.post(`/v1/tenants/${busy}/permissions/check`, check("user:1"))).body.can).toBe(
      "CHECK_RESULT_ALLOWED",
    );
  });
});
