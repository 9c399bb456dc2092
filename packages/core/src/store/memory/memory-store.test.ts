import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { describeStoreContract } from "../contract/index.ts";
import { SqliteStore } from "../drivers/sqlite.ts";
import { attr, keys, tuple } from "../testing/fixtures.ts";
import { MemoryStore } from "./memory-store.ts";

describeStoreContract("memory", async () => new MemoryStore());
describeStoreContract("memory, every index hash colliding", async () => new MemoryStore({ hashMask: 0 }));

describe("MemoryStore engine reads", () => {
  it("answer synchronously with plain values", async () => {
    const store = new MemoryStore();
    const snap = await store.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
    const got = store.queryTuples("t1", snap, [
      { entityType: "doc", entityIds: ["1"], relations: ["viewer"] },
    ]);
    expect(Array.isArray(got)).toBe(true);
    expect(got).toHaveLength(1);
    expect(store.headSnap("t1")).toBe(snap);
    expect(store.assertSnapReadable("t1", snap)).toBeUndefined();
    expect(store.listObjectIds("t1", snap, "user")).toEqual(["1"]);
  });
});

describe("MemoryStore as a replica (applyChangeSet)", () => {
  it("fed by another store's change feed, answers every snap like the source", async () => {
    const source = new MemoryStore();
    await source.createTenant("t2", "second");
    const bool = (data: boolean) => ({ type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data });
    const s1 = await source.write("t1", {
      tuples: [tuple("doc:1#viewer@user:1"), tuple("doc:1#viewer@user:2")],
      attributes: [attr("doc:1$public", bool(false))],
    });
    const s2 = await source.write("t2", { tuples: [tuple("doc:9#viewer@user:9")] });
    const s3 = await source.write("t1", {
      deleteTuples: [tuple("doc:1#viewer@user:1")],
      attributes: [attr("doc:1$public", bool(true))],
    });
    const replica = new MemoryStore();
    for (const tenant of ["t1", "t2"])
      for (const set of await source.changes(tenant, 0, 100)) replica.applyChangeSet(tenant, set);
    expect(replica.headSnap("t1")).toBe(s3);
    const q = [{ entityType: "doc", entityIds: ["1", "9"], relations: ["viewer"] }];
    const aq = [{ entityType: "doc", entityIds: ["1"], attributes: ["public"] }];
    for (const snap of [s1, s2, s3]) {
      for (const tenant of ["t1", "t2"]) {
        expect(keys(replica.queryTuples(tenant, snap, q))).toEqual(keys(source.queryTuples(tenant, snap, q)));
        expect(replica.queryAttributes(tenant, snap, aq)).toEqual(source.queryAttributes(tenant, snap, aq));
        expect(await replica.changes(tenant, 0, 100)).toEqual(await source.changes(tenant, 0, 100));
      }
    }
    expect(keys(replica.queryTuples("t1", s3, q))).toEqual(["doc:1#viewer@user:2"]);
    expect(() => replica.applyChangeSet("t1", { snap: s1, changes: [] })).toThrow(/not after/);
  });
});

describe("MemoryStore engine reads by evaluation time", () => {
  // a small universe, so that queries meet written rows; expiries around T0, evaluation times on both sides of them
  const T0 = Date.UTC(2030, 0, 1);
  const small = <T>(...xs: T[]) => fc.constantFrom(...xs);
  const expiresAt = fc.option(small(T0 + 100, T0 + 200, T0 + 300), { nil: undefined });
  const written = fc.record({
    entity: fc.record({ type: small("doc", "folder"), id: small("1", "2", "3") }),
    relation: small("viewer", "owner"),
    subject: fc.record({ type: small("user", "group"), id: small("a", "b"), relation: small("", "member") }),
    expiresAt,
  });
  const value = fc.record({ type: fc.constant("ATTRIBUTE_TYPE_BOOLEAN" as const), data: fc.boolean() });
  const attribute = fc.record({
    entity: fc.record({ type: small("doc", "folder"), id: small("1", "2", "3") }),
    attribute: small("public", "level"),
    value,
    expiresAt,
  });
  const dir = mkdtempSync(join(tmpdir(), "pemba-memory-expiry-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;

  it("answer what SQLite's reads answer at every evaluation time, before, at and after each expiry", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(written, { maxLength: 12 }),
        fc.array(attribute, { maxLength: 8 }),
        async (tuples, attributes) => {
          const memory = new MemoryStore();
          const sqlite = SqliteStore.open(join(dir, `${n++}.db`));
          try {
            const req = { tuples, attributes };
            const snap = await memory.write("t1", req);
            expect(await sqlite.write("t1", req)).toBe(snap);
            const byEntity = [
              { entityType: "doc", entityIds: ["1", "2", "3"], relations: ["viewer", "owner"] },
              { entityType: "folder", entityIds: ["1", "2", "3"], relations: ["viewer", "owner"] },
            ];
            const bySubject = ["user", "group"].flatMap((subjectType) =>
              ["", "member"].map((subjectRelation) => ({
                entityType: "doc",
                relations: ["viewer", "owner"],
                subjectType,
                subjectIds: ["a", "b"],
                subjectRelation,
              })),
            );
            const attributeQueries = [
              { entityType: "doc", entityIds: ["1", "2", "3"], attributes: ["public", "level"] },
              { entityType: "folder", attributes: ["public", "level"] },
            ];
            const sorted = (xs: string[]) => [...xs].sort();
            const attributeKeys = (xs: { entity: { id: string }; attribute: string }[]) =>
              sorted(xs.map((a) => `${a.entity.id}$${a.attribute}`));
            for (const at of [T0, T0 + 100, T0 + 150, T0 + 300, T0 + 1000]) {
              expect(sorted(keys(memory.queryTuples("t1", snap, byEntity, at)))).toEqual(
                sorted(keys(sqlite.queryTuples("t1", snap, byEntity, at))),
              );
              expect(sorted(keys(memory.querySubjectTuples("t1", snap, bySubject, at)))).toEqual(
                sorted(keys(sqlite.querySubjectTuples("t1", snap, bySubject, at))),
              );
              expect(attributeKeys(memory.queryAttributes("t1", snap, attributeQueries, at))).toEqual(
                attributeKeys(sqlite.queryAttributes("t1", snap, attributeQueries, at)),
              );
            }
          } finally {
            await sqlite.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
