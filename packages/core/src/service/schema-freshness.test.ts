/**
 * The head schema is never served stale to a request whose snap token is newer than the cached head: two
 * services ("processes") on one database file, with a head-schema TTL long enough that only the token can make
 * the second one notice the first one's schema write.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckQuery } from "../engine/types.ts";
import { LibsqlStore } from "../store/drivers/libsql.ts";
import { SqliteStore } from "../store/drivers/sqlite.ts";
import { ReplicaStore } from "../store/proxies/replica/index.ts";
import type { Store } from "../store/store.ts";
import { tuple } from "../store/testing/fixtures.ts";
import { PembaService } from "./pemba-service.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-schema-freshness-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const GRANTING = `entity user {}
entity doc {
  relation owner @user
  relation viewer @user
  permission view = owner or viewer
}`;
const REVOKING = `entity user {}
entity doc {
  relation owner @user
  relation viewer @user
  permission view = owner
}`;
const viewQuery: CheckQuery = {
  entity: { type: "doc", id: "1" },
  permission: "view",
  subject: { type: "user", id: "1", relation: "" },
};
const LONG_TTL = { headSchemaTtlMs: 60_000 };

const stores: [string, (file: string) => Promise<Store>][] = [
  // the Node server's default: SQLite with the in-memory replica (no refresh: only the token can help)
  ["SQLite + replica", (file) => ReplicaStore.open(SqliteStore.open(file), { refreshMs: 0 })],
  ["libSQL file:", (file) => LibsqlStore.open(`file:${file}`)],
];

describe.each(stores)("schema head freshness across processes: %s", (_name, open) => {
  it("a token from a write after a revoking schema write is answered with the new schema at once", async () => {
    const file = join(dir, `${_name.replace(/\W+/g, "-")}.db`);
    const storeA = await open(file);
    const storeB = await open(file);
    const a = new PembaService(storeA, LONG_TTL);
    const b = new PembaService(storeB, LONG_TTL);
    const meta = (snapToken: string) => ({ schemaVersion: "", snapToken, depth: 10 });

    await a.writeSchema("t1", GRANTING);
    const t1 = await a.writeData("t1", "", [tuple("doc:1#viewer@user:1")], []);
    expect((await b.check("t1", meta(t1), viewQuery)).can).toBe("CHECK_RESULT_ALLOWED");
    expect((await b.check("t1", meta(""), viewQuery)).can).toBe("CHECK_RESULT_ALLOWED"); // head now cached in B

    const revoked = await a.writeSchema("t1", REVOKING);
    const t2 = await a.writeData("t1", "", [tuple("doc:2#owner@user:2")], []);
    // B's cached head predates t2: B reads the head again and answers with the revoking schema
    expect((await b.check("t1", meta(t2), viewQuery)).can).toBe("CHECK_RESULT_DENIED");
    expect((await b.bulkCheck("t1", meta(t2), [viewQuery])).map((o) => o.can)).toEqual([
      "CHECK_RESULT_DENIED",
    ]);
    expect((await b.readSchema("t1", "")).version).toBe(revoked);
    // from then on B's head is the new one for every request
    expect((await b.check("t1", meta(""), viewQuery)).can).toBe("CHECK_RESULT_DENIED");
    expect((await b.check("t1", meta(t1), viewQuery)).can).toBe("CHECK_RESULT_DENIED");
    await storeA.close();
    await storeB.close();
  });

  it("a token no newer than the cached head costs no schema read", async () => {
    const file = join(dir, `cached-${_name.replace(/\W+/g, "-")}.db`);
    const storeA = await open(file);
    const a = new PembaService(storeA, LONG_TTL);
    await a.writeSchema("t1", GRANTING);
    const t1 = await a.writeData("t1", "", [tuple("doc:1#viewer@user:1")], []);
    let schemaReads = 0;
    const counting = new Proxy(await open(file), {
      get(target, prop, receiver) {
        if (prop === "headSchema") schemaReads++;
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const b = new PembaService(counting, LONG_TTL);
    const meta = { schemaVersion: "", snapToken: t1, depth: 10 };
    for (let i = 0; i < 5; i++)
      expect((await b.check("t1", meta, viewQuery)).can).toBe("CHECK_RESULT_ALLOWED");
    expect(schemaReads).toBe(1);
    await storeA.close();
    await counting.close();
  });
});
