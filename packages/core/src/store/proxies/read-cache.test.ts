import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Attribute, Tuple } from "../../model.ts";
import { LibsqlStore } from "../drivers/libsql.ts";
import { SqliteStore } from "../drivers/sqlite.ts";
import type { AttributeQuery, Store, TupleQuery } from "../store.ts";
import { attr, keys, tuple } from "../testing/fixtures.ts";
import { ReadCache } from "./read-cache.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-read-cache-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const IDS = ["1", "2", "3", "4"];
const RELATIONS = ["viewer", "owner", "editor"];
const ATTRIBUTES = ["public", "level"];
const bool = (data: boolean) => ({ type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data });

/** Rows over a few keys: some keys with several tuples, some with none; one deleted and one expired row. */
async function seed(store: Store): Promise<number> {
  await store.write("t1", {
    tuples: [
      tuple("doc:1#viewer@user:a"),
      tuple("doc:1#viewer@user:b"),
      tuple("doc:1#owner@user:a"),
      tuple("doc:2#viewer@group:g#member"),
      tuple("doc:3#editor@user:c"),
      tuple("folder:1#viewer@user:a"),
      { ...tuple("doc:4#viewer@user:x"), expiresAt: 1000 },
    ],
    attributes: [attr("doc:1$public", bool(true)), attr("doc:2$level", bool(false))],
  });
  return store.write("t1", {
    deleteTuples: [tuple("doc:1#viewer@user:b")],
    attributes: [attr("doc:3$public", bool(false))],
  });
}

const tupleQuery = fc.record({
  entityType: fc.constantFrom("doc", "folder"),
  entityIds: fc.uniqueArray(fc.constantFrom(...IDS), { minLength: 1 }),
  relations: fc.uniqueArray(fc.constantFrom(...RELATIONS), { minLength: 1 }),
});
const attributeQuery = fc.record(
  {
    entityType: fc.constantFrom("doc", "folder"),
    entityIds: fc.uniqueArray(fc.constantFrom(...IDS), { minLength: 1 }),
    attributes: fc.uniqueArray(fc.constantFrom(...ATTRIBUTES), { minLength: 1 }),
  },
  // without ids: every entity of the type (not filed per key)
  { requiredKeys: ["entityType", "attributes"] },
);
const call = fc.oneof(
  fc.record({ kind: fc.constant("tuples" as const), tuples: fc.array(tupleQuery, { maxLength: 3 }) }),
  fc.record({
    kind: fc.constant("attributes" as const),
    attributes: fc.array(attributeQuery, { maxLength: 3 }),
  }),
  fc.record({
    kind: fc.constant("both" as const),
    tuples: fc.array(tupleQuery, { maxLength: 3 }),
    attributes: fc.array(attributeQuery, { maxLength: 3 }),
  }),
);
type Call = { tuples?: TupleQuery[]; attributes?: AttributeQuery[]; kind: "tuples" | "attributes" | "both" };

const attributeKeys = (list: readonly Attribute[]) =>
  [
    ...new Set(list.map((a) => `${a.entity.type}:${a.entity.id}$${a.attribute}=${JSON.stringify(a.value)}`)),
  ].sort();
const tupleKeys = (list: readonly Tuple[]) => [...new Set(keys(list))].sort();

/**
 * What a store answers a call, as sorted distinct keys: order is not part of the contract, and neither is how often
 * a row comes back for a key asked twice in one call (the engine never asks twice; SQL stores differ there too).
 */
async function answer(store: Store, snap: number, c: Call): Promise<[string[], string[]]> {
  const at = 2000;
  if (c.kind === "tuples") return [tupleKeys(await store.queryTuples("t1", snap, c.tuples!, at)), []];
  if (c.kind === "attributes")
    return [[], attributeKeys(await store.queryAttributes("t1", snap, c.attributes!, at))];
  const [t, a] = await store.queryTuplesAndAttributes!("t1", snap, c.tuples!, c.attributes!, at);
  return [tupleKeys(t), attributeKeys(a)];
}

describe.each([
  ["SQLite (answers synchronously)", (file: string) => SqliteStore.open(file)],
  ["libSQL (answers with promises)", (file: string) => LibsqlStore.open(`file:${file}`)],
])("ReadCache over %s", (_name, open) => {
  let store: Store;
  let snap: number;
  let n = 0;
  beforeAll(async () => {
    store = await open(join(dir, `${n++}-${Math.random()}.db`));
    snap = await seed(store);
    return () => store.close();
  });

  it("answers every sequence of calls exactly as the store does, and asks it each key at most once", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 8 }), async (calls) => {
        const cache = new ReadCache(store);
        for (const c of calls) expect(await answer(cache, snap, c)).toEqual(await answer(store, snap, c));
        // every key asked by id reached the store once: all of them again cost no key
        const asked = cache.innerKeys;
        for (const c of calls) await answer(cache, snap, c);
        expect(cache.innerKeys).toBe(asked);
      }),
      { numRuns: 60 },
    );
  });

  it("a key asked twice in one call is read once and answered once", async () => {
    const cache = new ReadCache(store);
    const twice = [
      { entityType: "doc", entityIds: ["1"], relations: ["viewer"] },
      { entityType: "doc", entityIds: ["1", "2"], relations: ["viewer"] },
    ];
    expect(keys(await cache.queryTuples("t1", snap, twice, 2000))).toEqual([
      "doc:1#viewer@user:a",
      "doc:2#viewer@group:g#member",
    ]);
    expect(cache.innerKeys).toBe(2);
  });
});

describe("ReadCache when the store fails", () => {
  it("keeps no key of the failed read: the next call asks the store again", async () => {
    const store = SqliteStore.open(join(dir, "fail.db"));
    const snap = await seed(store);
    let fail = true;
    const flaky = new Proxy(store, {
      get(target, p, receiver) {
        if (p === "queryTuples" && fail) return () => Promise.reject(new Error("connection lost"));
        const v = Reflect.get(target, p, receiver);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const cache = new ReadCache(flaky);
    const q = [{ entityType: "doc", entityIds: ["1"], relations: ["viewer", "owner"] }];
    await expect(cache.queryTuples("t1", snap, q, 2000)).rejects.toThrow("connection lost");
    fail = false;
    expect(keys(await cache.queryTuples("t1", snap, q, 2000)).sort()).toEqual([
      "doc:1#owner@user:a",
      "doc:1#viewer@user:a",
    ]);
    await store.close();
  });
});
