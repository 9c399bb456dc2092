import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeStoreContract } from "../contract/index.ts";
import { migrate, openStore } from "../open.ts";
import { attr, tuple } from "../testing/fixtures.ts";
import { type PostgresServer, startPostgres } from "../testing/postgres-server.ts";
import { PostgresStore } from "./postgres.ts";

let server: PostgresServer;
let admin: pg.Pool;
let n = 0;

beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Pool({ connectionString: server.url, max: 1 });
});
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

/** A fresh database per test. */
async function freshUrl(): Promise<string> {
  const name = `pemba_${n++}`;
  await admin.query(`CREATE DATABASE ${name}`);
  return server.url.replace(/\/postgres$/, `/${name}`);
}

describeStoreContract("postgres", async () => PostgresStore.open(await freshUrl()));

describe("PostgresStore", () => {
  it("serializes concurrent writes into distinct, increasing snaps and reports statement kinds", async () => {
    const kinds = new Set<string>();
    const store = await PostgresStore.open(await freshUrl(), { onQuery: (kind) => kinds.add(kind) });
    const snaps = await Promise.all(
      Array.from({ length: 8 }, (_, i) => store.write("t1", { tuples: [tuple(`doc:${i}#viewer@user:1`)] })),
    );
    expect(new Set(snaps).size).toBe(8);
    expect(Math.max(...snaps)).toBe(await store.headSnap("t1"));
    const all = await store.querySubjectTuples("t1", Math.max(...snaps), [
      {
        entityType: "doc",
        relations: ["viewer"],
        subjectType: "user",
        subjectIds: ["1"],
        subjectRelation: "",
      },
    ]);
    expect(all).toHaveLength(8);
    expect([...kinds].sort()).toEqual(["head_snap", "query_subject_tuples", "write"]);
    await store.close();
  });

  it("migrate applies the migrations once; openStore picks PostgresStore", async () => {
    const url = await freshUrl();
    expect(await migrate(url)).toEqual(["0000_init", "0001_seed", "0002_expiry"]);
    expect(await migrate(url)).toEqual([]);
    const store = await openStore(url.replace(/^postgres:/, "postgresql:"));
    expect(store.kind).toBe("postgres");
    expect((await store.getTenant("t1"))?.name).toBe("example tenant");
    await store.close();
  });

  it("migrating an already migrated database is a no-op", async () => {
    const url = await freshUrl();
    const first = await PostgresStore.open(url);
    const snap = await first.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    await first.close();
    const second = await PostgresStore.open(url);
    expect(await second.headSnap("t1")).toBe(snap);
    await second.close();
  });

  it("a write the database rejects part-way leaves nothing (one real transaction)", async () => {
    const url = await freshUrl();
    const store = await PostgresStore.open(url);
    const raw = new pg.Pool({ connectionString: url, max: 1 });
    await raw.query(`CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN
        IF NEW.attribute = 'boom' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
    await raw.query("CREATE TRIGGER boom BEFORE INSERT ON attributes FOR EACH ROW EXECUTE FUNCTION boom()");
    await raw.end();
    const head = await store.headSnap("t1");
    await expect(
      store.write("t1", {
        tuples: [tuple("doc:1#viewer@user:1")],
        attributes: [attr("doc:1$boom", { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true })],
      }),
    ).rejects.toMatchObject({ code: "ERROR_CODE_SQL_EXECUTION" });
    expect(await store.headSnap("t1")).toBe(head);
    expect((await store.readTuples("t1", head + 1, {}, 10)).items).toEqual([]);
    await store.close();
  });
});
