/**
 * The memory store's columnar tables beyond the store contract: colliding hashes, interning per tenant, gc
 * compaction (unlinking rows, dropping strings, stable cursors), large fan-outs, and a randomized comparison
 * against a plain reference model at every snap.
 */
import { describe, expect, it } from "vitest";
import { type Attribute, type AttributeValue, attributeKey, type Tuple, tupleKey } from "../../model.ts";
import type { ChangeSet } from "../store.ts";
import { attr, keys, tuple } from "../testing/fixtures.ts";
import { Interner, NONE } from "./columns.ts";
import { MemoryStore } from "./memory-store.ts";
import type { TenantData } from "./tenant.ts";

const int = (data: number): AttributeValue => ({ type: "ATTRIBUTE_TYPE_INTEGER", data });
const bool = (data: boolean): AttributeValue => ({ type: "ATTRIBUTE_TYPE_BOOLEAN", data });
const viewers = (ids: string[]) => [{ entityType: "doc", entityIds: ids, relations: ["viewer"] }];
const subjectsOf = (ids: string[]) => [
  { entityType: "doc", relations: ["viewer"], subjectType: "user", subjectIds: ids, subjectRelation: "" },
];
const tenantData = (store: MemoryStore, id: string): TenantData =>
  (store as unknown as { tenants: Map<string, TenantData> }).tenants.get(id) as TenantData;

/** A tiny deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Reference model: every row ever written with its created/deleted snaps (deleted Infinity while live). */
interface RefRow<T> {
  item: T;
  key: string;
  created: number;
  deleted: number;
}
const visible = <T>(rows: RefRow<T>[], snap: number) =>
  rows.filter((r) => r.created <= snap && r.deleted > snap).map((r) => r.item);

for (const [label, hashMask] of [
  ["normal hashes", -1],
  ["every hash colliding", 0],
] as const) {
  describe(`MemoryStore tables (${label})`, () => {
    it("match a reference model at every snap under random writes, deletes and gc", async () => {
      const random = rng(hashMask === 0 ? 7 : 42);
      const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)];
      const store = new MemoryStore({ hashMask });
      const types = ["doc", "folder", "user"];
      const relations = ["viewer", "owner"];
      const ids = Array.from({ length: 4 }, (_, i) => `i${i}`);
      const subjectRelations = ["", "", "member"];
      const randomTuple = (): Tuple => ({
        entity: { type: pick(types), id: pick(ids) },
        relation: pick(relations),
        subject: { type: pick(types), id: pick(ids), relation: pick(subjectRelations) },
      });
      const tuples: RefRow<Tuple>[] = [];
      const attributes: RefRow<Attribute>[] = [];
      const snaps: number[] = [];
      let horizon = 0;
      let collected = 0;
      const liveTuple = (key: string) => tuples.find((r) => r.key === key && r.deleted === Infinity);
      const liveAttribute = (key: string) => attributes.find((r) => r.key === key && r.deleted === Infinity);

      for (let step = 0; step < 120; step++) {
        const op = random();
        const head = store.headSnap("t1") + 1;
        if (op < 0.55) {
          const write = Array.from({ length: 1 + Math.floor(random() * 8) }, randomTuple);
          const deletes = tuples.filter((r) => r.deleted === Infinity && random() < 0.15).map((r) => r.item);
          const attrs = Array.from({ length: Math.floor(random() * 4) }, () =>
            attr(`${pick(types)}:${pick(ids)}$${pick(["level", "public"])}`, int(Math.floor(random() * 5))),
          );
          const snap = await store.write("t1", { tuples: write, deleteTuples: deletes, attributes: attrs });
          expect(snap).toBe(head);
          for (const t of deletes) {
            const row = liveTuple(tupleKey(t));
            if (row) row.deleted = snap;
          }
          for (const t of write) {
            const key = tupleKey(t);
            if (!liveTuple(key)) tuples.push({ item: t, key, created: snap, deleted: Infinity });
          }
          // the last write of a key wins and takes that place in row order
          const lastOf = new Map<string, Attribute>();
          for (const a of attrs) {
            lastOf.delete(attributeKey(a));
            lastOf.set(attributeKey(a), a);
          }
          for (const [key, a] of lastOf) {
            const old = liveAttribute(key);
            if (old) old.deleted = snap;
            attributes.push({ item: a, key, created: snap, deleted: Infinity });
          }
        } else if (op < 0.75) {
          const filter = { entity: { type: pick(types), ids: [pick(ids), pick(ids)] } };
          const attrFilter = { entity: { type: pick(types) }, attributes: ["level"] };
          const snap = await store.write("t1", {
            deleteTupleFilters: [filter],
            deleteAttributeFilters: [attrFilter],
          });
          for (const r of tuples) {
            const t = r.item;
            if (
              r.deleted === Infinity &&
              t.entity.type === filter.entity.type &&
              filter.entity.ids.includes(t.entity.id)
            )
              r.deleted = snap;
          }
          for (const r of attributes) {
            const a = r.item;
            if (r.deleted === Infinity && a.entity.type === attrFilter.entity.type && a.attribute === "level")
              r.deleted = snap;
          }
        } else if (op < 0.85 && snaps.length > 4) {
          // collect everything deleted at or before a recent snap
          const cutoff = snaps[snaps.length - 3];
          const log = tenantData(store, "t1").txLog;
          for (const e of log) if (e.tx <= cutoff) e.at = 0;
          const removed = await store.gc(new Date(1));
          horizon = Math.max(horizon, cutoff);
          const dead = (r: RefRow<unknown>) => r.deleted <= horizon;
          const expected = tuples.filter(dead).length + attributes.filter(dead).length;
          expect(removed).toBe(expected);
          collected += removed;
          tuples.splice(0, tuples.length, ...tuples.filter((r) => !dead(r)));
          attributes.splice(0, attributes.length, ...attributes.filter((r) => !dead(r)));
        } else {
          await store.write("t1", {});
        }
        snaps.push(store.headSnap("t1"));

        // every readable snap answers exactly like the model
        for (const snap of snaps.filter((s) => s >= horizon).slice(-6)) {
          const expectTuples = visible(tuples, snap);
          const sortedKeys = (ts: Tuple[]) => ts.map(tupleKey).sort();
          for (const type of types) {
            const byEntity = store.queryTuples("t1", snap, [{ entityType: type, entityIds: ids, relations }]);
            expect(keys(byEntity)).toEqual(sortedKeys(expectTuples.filter((t) => t.entity.type === type)));
            for (const subjectRelation of ["", "member"]) {
              const q = { entityType: "doc", relations, subjectType: type, subjectIds: ids, subjectRelation };
              expect(keys(store.querySubjectTuples("t1", snap, [q]))).toEqual(
                sortedKeys(
                  expectTuples.filter(
                    (t) =>
                      t.entity.type === "doc" &&
                      t.subject.type === type &&
                      t.subject.relation === subjectRelation,
                  ),
                ),
              );
            }
            const objectIds = new Set<string>();
            for (const t of expectTuples) {
              if (t.entity.type === type) objectIds.add(t.entity.id);
              if (t.subject.type === type) objectIds.add(t.subject.id);
            }
            for (const a of visible(attributes, snap)) if (a.entity.type === type) objectIds.add(a.entity.id);
            expect(store.listObjectIds("t1", snap, type)).toEqual([...objectIds].sort());
            const attrKeys = (as: Attribute[]) => as.map((a) => `${attributeKey(a)}=${a.value.data}`).sort();
            const expectAttrs = attrKeys(visible(attributes, snap).filter((a) => a.entity.type === type));
            const names = ["level", "public"];
            expect(
              attrKeys(store.queryAttributes("t1", snap, [{ entityType: type, attributes: names }])),
            ).toEqual(expectAttrs);
            expect(
              attrKeys(
                store.queryAttributes("t1", snap, [{ entityType: type, entityIds: ids, attributes: names }]),
              ),
            ).toEqual(expectAttrs);
          }
          // paged reads: row order is write order
          expect((await store.readTuples("t1", snap, {}, 0)).items).toEqual(expectTuples);
          expect((await store.readAttributes("t1", snap, {}, 0)).items).toEqual(visible(attributes, snap));
        }
      }
      expect(collected).toBeGreaterThan(10);
      expect(horizon).toBeGreaterThan(20);
      // the change feed replays into a replica that answers like the source
      const replica = new MemoryStore({ hashMask });
      for (const set of await store.changes("t1", horizon, 1000)) replica.applyChangeSet("t1", set);
      const head = store.headSnap("t1");
      expect((await replica.readTuples("t1", head, {}, 0)).items.map(tupleKey).sort()).toEqual(
        visible(tuples, head)
          .filter((r) => tuples.find((x) => x.item === r && x.created > horizon))
          .map(tupleKey)
          .sort(),
      );
    });

    it("keeps a huge fan-out exact in both directions, at old snaps too", async () => {
      const store = new MemoryStore({ hashMask });
      const n = hashMask === 0 ? 300 : 5000;
      const users = Array.from({ length: n }, (_, i) => String(i));
      const s1 = await store.write("t1", {
        tuples: users.flatMap((u) => [tuple(`doc:big#viewer@user:${u}`), tuple(`doc:${u}#viewer@user:star`)]),
      });
      const odd = users.filter((u) => Number(u) % 2 === 1);
      const s2 = await store.write("t1", {
        deleteTuples: odd.flatMap((u) => [
          tuple(`doc:big#viewer@user:${u}`),
          tuple(`doc:${u}#viewer@user:star`),
        ]),
      });
      const s3 = await store.write("t1", { tuples: [tuple("doc:big#viewer@user:1")] });
      const subjects = (snap: number) =>
        store.queryTuples("t1", snap, viewers(["big"])).map((t) => t.subject.id);
      // one key's rows come back in write order
      expect(subjects(s1)).toEqual(users);
      expect(subjects(s2)).toEqual(users.filter((u) => Number(u) % 2 === 0));
      expect(subjects(s3)).toEqual([...users.filter((u) => Number(u) % 2 === 0), "1"]);
      const docs = (snap: number) =>
        store.querySubjectTuples("t1", snap, subjectsOf(["star"])).map((t) => t.entity.id);
      expect(docs(s1)).toEqual(users);
      expect(docs(s2)).toEqual(users.filter((u) => Number(u) % 2 === 0));
      // gc unlinks the deleted half from both chains; re-inserting after gc appends
      const log = tenantData(store, "t1").txLog;
      for (const e of log) if (e.tx <= s2) e.at = 0;
      expect(await store.gc(new Date(1))).toBe(odd.length * 2);
      expect(subjects(s3)).toEqual([...users.filter((u) => Number(u) % 2 === 0), "1"]);
      expect(docs(s3)).toEqual(users.filter((u) => Number(u) % 2 === 0));
      const s4 = await store.write("t1", { tuples: [tuple("doc:3#viewer@user:star")] });
      expect(docs(s4)).toEqual([...users.filter((u) => Number(u) % 2 === 0), "3"]);
      expect(store.queryTuples("t1", s4, viewers(["1"]))).toEqual([]);
    });
  });
}

describe("MemoryStore interning", () => {
  it("keeps per-tenant string tables: same strings in other orders, other tenants unaffected", async () => {
    const store = new MemoryStore();
    await store.createTenant("b", "B");
    await store.write("t1", {
      tuples: [tuple("doc:1#viewer@user:1")],
      attributes: [attr("doc:1$x", int(1))],
    });
    // tenant b interns the same strings in another order, plus strings t1 never saw
    const snap = await store.write("b", {
      tuples: [tuple("user:1#viewer@doc:1"), tuple("team:z#member@user:9")],
      attributes: [attr("user:1$x", int(2))],
    });
    expect(keys(store.queryTuples("t1", snap, viewers(["1"])))).toEqual(["doc:1#viewer@user:1"]);
    expect(store.queryTuples("b", snap, viewers(["1"]))).toEqual([]);
    expect(
      keys(store.queryTuples("b", snap, [{ entityType: "user", entityIds: ["1"], relations: ["viewer"] }])),
    ).toEqual(["user:1#viewer@doc:1"]);
    // strings known only to the other tenant match nothing
    expect(
      store.queryTuples("t1", snap, [{ entityType: "team", entityIds: ["z"], relations: ["member"] }]),
    ).toEqual([]);
    expect(await store.readTuples("t1", snap, { subject: { type: "user", ids: ["9"] } }, 10)).toEqual({
      items: [],
      cursor: "",
    });
    expect(store.queryAttributes("b", snap, [{ entityType: "doc", attributes: ["x"] }])).toEqual([]);
    expect(store.queryAttributes("b", snap, [{ entityType: "user", attributes: ["x"] }])).toEqual([
      attr("user:1$x", int(2)),
    ]);
    expect(store.listObjectIds("b", snap, "user")).toEqual(["1", "9"]);
    expect(store.listObjectIds("t1", snap, "team")).toEqual([]);
    // a deleted and recreated tenant starts empty
    await store.deleteTenant("b");
    await store.createTenant("b", "B again");
    const later = await store.write("b", {});
    expect(await store.listObjectIds("b", later, "user")).toEqual([]);
    expect(keys(store.queryTuples("t1", later, viewers(["1"])))).toEqual(["doc:1#viewer@user:1"]);
  });

  it("returns plain result objects the caller cannot use to change the store; booleans share one value", async () => {
    const store = new MemoryStore();
    const snap = await store.write("t1", {
      tuples: [tuple("doc:1#viewer@user:1")],
      attributes: [attr("doc:1$a", bool(true)), attr("doc:2$a", bool(true)), attr("doc:3$l", int(3))],
    });
    const [t] = store.queryTuples("t1", snap, viewers(["1"]));
    t.subject.id = "2";
    t.entity.id = "9";
    expect(keys(store.queryTuples("t1", snap, viewers(["1"])))).toEqual(["doc:1#viewer@user:1"]);
    const got = store.queryAttributes("t1", snap, [{ entityType: "doc", attributes: ["a", "l"] }]);
    expect(got.map((a) => a.value.data)).toEqual([true, true, 3]);
    expect(got[0].value).toBe(got[1].value);
    expect(Object.isFrozen(got[0].value) && Object.isFrozen(got[2].value)).toBe(true);
  });

  it("gc drops strings no row uses any more and keeps cursors and the feed valid", async () => {
    const store = new MemoryStore();
    const s1 = await store.write("t1", {
      tuples: Array.from({ length: 10 }, (_, i) => tuple(`doc:${i}#viewer@user:gone${i}`)),
      attributes: [attr("doc:0$gone", int(1)), attr("doc:5$level", int(7))],
    });
    const s2 = await store.write("t1", {
      deleteTupleFilters: [{ subject: { type: "user", ids: ["gone0", "gone1", "gone2", "gone3"] } }],
      deleteAttributes: [{ entity: { type: "doc", id: "0" }, attribute: "gone" }],
    });
    // deleted after the horizon: kept (history) but not live, so writing it again must create it
    const s2b = await store.write("t1", { deleteTuples: [tuple("doc:8#viewer@user:gone8")] });
    const page1 = await store.readTuples("t1", s2, {}, 3);
    expect(keys(page1.items)).toEqual([
      "doc:4#viewer@user:gone4",
      "doc:5#viewer@user:gone5",
      "doc:6#viewer@user:gone6",
    ]);
    const d = tenantData(store, "t1");
    expect(d.strings.lookup("gone0")).not.toBe(-1);
    for (const e of d.txLog) if (e.tx <= s2) e.at = 0;
    expect(await store.gc(new Date(1))).toBe(5);
    expect(d.strings.lookup("gone0")).toBe(-1);
    expect(d.strings.lookup("gone")).toBe(-1);
    expect(d.strings.lookup("gone4")).not.toBe(-1);
    expect(d.tuples.n).toBe(6);
    // the cursor taken before gc continues where it stopped
    const page2 = await store.readTuples("t1", s2, {}, 100, page1.cursor);
    expect(keys(page2.items)).toEqual([
      "doc:7#viewer@user:gone7",
      "doc:8#viewer@user:gone8",
      "doc:9#viewer@user:gone9",
    ]);
    // reads after renumbering, writes of dropped strings again, the feed after the horizon
    const s3 = await store.write("t1", {
      tuples: [tuple("doc:0#viewer@user:gone0"), tuple("doc:8#viewer@user:gone8")],
      deleteTuples: [tuple("doc:9#viewer@user:gone9")],
    });
    expect(keys(store.queryTuples("t1", s3, viewers(["0", "8", "9"])))).toEqual([
      "doc:0#viewer@user:gone0",
      "doc:8#viewer@user:gone8",
    ]);
    expect(store.queryTuples("t1", s2b, viewers(["8"]))).toEqual([]);
    expect(keys(store.querySubjectTuples("t1", s3, subjectsOf(["gone0", "gone5"])))).toEqual([
      "doc:0#viewer@user:gone0",
      "doc:5#viewer@user:gone5",
    ]);
    // attributes survive the renumbering ("level" was interned after the dropped strings)
    const level = [attr("doc:5$level", int(7))];
    expect(
      store.queryAttributes("t1", s3, [{ entityType: "doc", entityIds: ["5"], attributes: ["level"] }]),
    ).toEqual(level);
    expect(store.queryAttributes("t1", s3, [{ entityType: "doc", attributes: ["level", "gone"] }])).toEqual(
      level,
    );
    expect((await store.readAttributes("t1", s3, {}, 10)).items).toEqual(level);
    expect(await store.changes("t1", 0, 10)).toEqual([
      { snap: s2b, changes: [{ operation: "OPERATION_DELETE", tuple: tuple("doc:8#viewer@user:gone8") }] },
      {
        snap: s3,
        changes: [
          { operation: "OPERATION_DELETE", tuple: tuple("doc:9#viewer@user:gone9") },
          { operation: "OPERATION_CREATE", tuple: tuple("doc:0#viewer@user:gone0") },
          { operation: "OPERATION_CREATE", tuple: tuple("doc:8#viewer@user:gone8") },
        ],
      },
    ]);
    expect(s1).toBeLessThan(s2);
  });

  it("collectUpTo counts little garbage at once and removes it physically once it is an eighth of the rows", async () => {
    const store = new MemoryStore();
    const s1 = await store.write("t1", {
      tuples: Array.from({ length: 100 }, (_, i) => tuple(`doc:${i}#viewer@user:u${i}`)),
    });
    const s2 = await store.write("t1", {
      deleteTuples: [tuple("doc:0#viewer@user:u0"), tuple("doc:1#viewer@user:u1")],
    });
    const s3 = await store.write("t1", {
      deleteTupleFilters: [
        { entity: { type: "doc", ids: Array.from({ length: 11 }, (_, i) => String(i + 2)) } },
      ],
    });
    const d = tenantData(store, "t1");
    expect(store.collectUpTo(s2)).toBe(2);
    expect(d.tuples.n).toBe(100); // 2 of 100: counted, kept until there is more
    expect(store.collectUpTo(s2)).toBe(0);
    expect(store.collectUpTo(s1)).toBe(0); // the horizon never moves back
    expect(() => store.assertSnapReadable("t1", s1)).toThrow(
      expect.objectContaining({ code: "ERROR_CODE_SNAP_TOKEN_EXPIRED" }),
    );
    store.assertSnapReadable("t1", s2);
    expect(store.queryTuples("t1", s2, viewers(["0", "1", "2"])).map(tupleKey)).toEqual([
      "doc:2#viewer@user:u2",
    ]);
    expect((await store.changes("t1", 0, 10)).map((c) => c.snap)).toEqual([s3]);
    expect(store.collectUpTo(s3)).toBe(11);
    expect(d.tuples.n).toBe(87); // 13 of 100: removed
    expect(d.strings.lookup("u0")).toBe(-1);
    expect(store.queryTuples("t1", s3, viewers(["0", "12", "13"])).map(tupleKey)).toEqual([
      "doc:13#viewer@user:u13",
    ]);
    expect(await store.gc(new Date(Date.now() + 60_000))).toBe(0);
  });

  it("applies 1,000-row change sets as a replica, creating tenants on demand", async () => {
    const replica = new MemoryStore();
    const sets: ChangeSet[] = [];
    for (let k = 0; k < 5; k++) {
      const changes: ChangeSet["changes"] = [];
      for (let i = 0; i < 1000; i++) {
        const id = String(k * 1000 + i);
        changes.push({ operation: "OPERATION_CREATE", tuple: tuple(`doc:${id}#viewer@user:${i % 7}`) });
      }
      if (k > 0)
        changes.unshift({
          operation: "OPERATION_DELETE",
          tuple: tuple(`doc:${(k - 1) * 1000}#viewer@user:0`),
        });
      sets.push({ snap: 10 * (k + 1), changes });
    }
    for (const set of sets) replica.applyChangeSet("r", set);
    expect(replica.headSnap("r")).toBe(50);
    expect(replica.querySubjectTuples("r", 50, subjectsOf(["0"]))).toHaveLength(Math.ceil(5000 / 7) - 4);
    expect(replica.querySubjectTuples("r", 10, subjectsOf(["0"]))).toHaveLength(Math.ceil(1000 / 7));
    expect(await replica.changes("r", 0, 100)).toEqual(sets);
  });
});

describe("Interner.lookup's recent strings", () => {
  it("remembers found strings only, and forgets them at a rebuild", () => {
    const strings = new Interner();
    expect(strings.lookup("u1")).toBe(NONE);
    const ids = ["u1", "u2", "u3", "u4", "u5", "u6"].map((s) => strings.intern(s));
    for (let round = 0; round < 3; round++) {
      ["u1", "u2", "u3", "u4", "u5", "u6", "u2", "u2"].forEach((s) => {
        expect(strings.lookup(s)).toBe(ids[Number(s.slice(1)) - 1]);
      });
    }
    expect(strings.lookup(String.fromCharCode(117, 51))).toBe(ids[2]); // equal content, another string object
    const used = new Uint8Array(strings.strings.length);
    used[ids[5]!] = 1; // keep only u6
    strings.rebuild(used);
    expect(strings.lookup("u2")).toBe(NONE);
    expect(strings.lookup("u6")).toBe(1);
    expect(strings.lookup("")).toBe(0);
  });
});

describe("Interner.remember", () => {
  it("puts a string among the recent ones, which lookup then answers without the table", () => {
    const strings = new Interner();
    const [a, b] = ["a", "b", "c"].map((s) => strings.intern(s));
    strings.remember("a", a!);
    strings.remember("a", a!); // once only: "b" stays among the last four below
    strings.remember("b", b!);
    strings.ids = new Map(); // lookups that miss the recent strings now find nothing
    expect(strings.lookup("a")).toBe(a);
    expect(strings.lookup("b")).toBe(b);
    expect(strings.lookup("c")).toBe(NONE);
  });

  it("is fed the subject of a relation with exactly one visible tuple by queryTuples", async () => {
    const store = new MemoryStore();
    const snap = await store.write("t1", {
      tuples: [
        tuple("doc:1#owner@user:alice"),
        tuple("doc:2#viewer@user:bob"),
        tuple("doc:2#viewer@user:carol"),
      ],
    });
    const d = tenantData(store, "t1");
    const alice = d.strings.lookup("alice");
    const bob = d.strings.lookup("bob");
    const fresh = new Interner();
    fresh.strings = d.strings.strings;
    fresh.ids = d.strings.ids;
    d.strings = fresh; // nothing recent yet
    expect(
      keys(store.queryTuples("t1", snap, [{ entityType: "doc", entityIds: ["1"], relations: ["owner"] }])),
    ).toEqual(["doc:1#owner@user:alice"]);
    expect(
      keys(store.queryTuples("t1", snap, [{ entityType: "doc", entityIds: ["2"], relations: ["viewer"] }])),
    ).toHaveLength(2);
    fresh.ids = new Map([["doc", d.strings.lookupName("doc")]]);
    expect(fresh.lookup("alice")).toBe(alice);
    expect(fresh.lookup("bob")).toBe(NONE); // two viewers: neither remembered
    expect(bob).not.toBe(NONE);
  });
});

describe("Interner.lookupName (the small name cache)", () => {
  it("gives lookup's numbers, sees names interned later, and follows a rebuild", () => {
    const strings = new Interner();
    expect(strings.lookupName("document")).toBe(NONE);
    const doc = strings.intern("document");
    const owner = strings.intern("owner");
    expect(strings.lookupName("document")).toBe(doc);
    expect(strings.lookupName("document")).toBe(doc); // from the cache
    expect(strings.lookupName("owner")).toBe(strings.lookup("owner"));
    // keep only "owner": its number changes, "document" is gone
    const used = new Uint8Array(strings.strings.length);
    used[owner] = 1;
    strings.rebuild(used);
    expect(strings.lookupName("document")).toBe(NONE);
    expect(strings.lookupName("owner")).toBe(strings.lookup("owner"));
    expect(strings.lookupName("owner")).not.toBe(owner);
  });
});
