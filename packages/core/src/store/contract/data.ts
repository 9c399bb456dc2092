/** Contract: writes, deletes, batched engine reads, typed attribute values, isolation and atomicity. */
import { describe, expect, it } from "vitest";
import type { Attribute } from "../../model.ts";
import { attr, keys, tuple } from "../testing/fixtures.ts";
import type { StoreHandle } from "./handle.ts";

const bool = (data: boolean) => ({ type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data });
const int = (data: number) => ({ type: "ATTRIBUTE_TYPE_INTEGER" as const, data });

export function describeDataContract(h: StoreHandle): void {
  describe("writes", () => {
    it("each write returns a new, increasing snap; headSnap follows", async () => {
      const s = h.store;
      const before = await s.headSnap("t1");
      const a = await s.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
      const b = await s.write("t1", { tuples: [tuple("doc:1#viewer@user:2")] });
      const c = await s.write("t1", {});
      expect(a).toBeGreaterThan(before);
      expect(b).toBeGreaterThan(a);
      expect(c).toBeGreaterThan(b);
      expect(await s.headSnap("t1")).toBe(c);
    });

    it("inserting an existing tuple is a no-op", async () => {
      const s = h.store;
      await s.write("t1", { tuples: [tuple("doc:1#viewer@user:1"), tuple("doc:1#viewer@user:1")] });
      const snap = await s.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] });
      const page = await s.readTuples("t1", snap, {}, 100);
      expect(keys(page.items)).toEqual(["doc:1#viewer@user:1"]);
    });

    it("an attribute write replaces the old value", async () => {
      const s = h.store;
      const first = await s.write("t1", { attributes: [attr("doc:1$public", bool(false))] });
      const second = await s.write("t1", { attributes: [attr("doc:1$public", bool(true))] });
      const q = [{ entityType: "doc", entityIds: ["1"], attributes: ["public"] }];
      expect(await s.queryAttributes("t1", second, q)).toEqual([attr("doc:1$public", bool(true))]);
      expect(await s.queryAttributes("t1", first, q)).toEqual([attr("doc:1$public", bool(false))]);
      expect((await s.readAttributes("t1", second, {}, 100)).items).toEqual([
        attr("doc:1$public", bool(true)),
      ]);
    });

    it("the last value of an attribute written twice in one request wins", async () => {
      const s = h.store;
      const snap = await s.write("t1", {
        attributes: [attr("doc:1$level", int(1)), attr("doc:2$level", int(5)), attr("doc:1$level", int(2))],
      });
      const got = await s.queryAttributes("t1", snap, [
        { entityType: "doc", entityIds: ["1"], attributes: ["level"] },
      ]);
      expect(got).toEqual([attr("doc:1$level", int(2))]);
      expect((await s.readAttributes("t1", snap, {}, 10)).items).toHaveLength(2);
    });

    it("exact deletes and filter deletes", async () => {
      const s = h.store;
      await s.write("t1", {
        tuples: [
          "doc:1#viewer@user:1",
          "doc:1#viewer@user:2",
          "doc:2#viewer@user:1",
          "doc:2#owner@user:1",
          "folder:1#viewer@user:1",
        ].map(tuple),
        attributes: [
          attr("doc:1$public", bool(true)),
          attr("doc:2$public", bool(true)),
          attr("doc:2$level", int(3)),
        ],
      });
      const snap = await s.write("t1", {
        deleteTuples: [tuple("doc:1#viewer@user:2"), tuple("doc:9#viewer@user:9")],
        deleteTupleFilters: [{ entity: { type: "doc", ids: ["2"] }, relation: "viewer" }],
        deleteAttributes: [{ entity: { type: "doc", id: "1" }, attribute: "public" }],
        deleteAttributeFilters: [{ entity: { type: "doc", ids: ["2"] }, attributes: ["level"] }],
      });
      expect(keys((await s.readTuples("t1", snap, {}, 100)).items)).toEqual([
        "doc:1#viewer@user:1",
        "doc:2#owner@user:1",
        "folder:1#viewer@user:1",
      ]);
      expect((await s.readAttributes("t1", snap, {}, 100)).items).toEqual([attr("doc:2$public", bool(true))]);
      const wide = await s.write("t1", { deleteTupleFilters: [{ subject: { type: "user", ids: ["1"] } }] });
      expect((await s.readTuples("t1", wide, {}, 100)).items).toEqual([]);
    });

    it("writing to an unknown tenant fails with TENANT_NOT_FOUND", async () => {
      await expect(h.store.write("nope", { tuples: [tuple("doc:1#viewer@user:1")] })).rejects.toMatchObject({
        code: "ERROR_CODE_TENANT_NOT_FOUND",
      });
    });

    it("a write with an invalid item leaves nothing and takes no snap", async () => {
      const s = h.store;
      const head = await s.headSnap("t1");
      const bad: Attribute = attr("doc:1$level", { type: "ATTRIBUTE_TYPE_INTEGER", data: 1.5 });
      await expect(
        s.write("t1", {
          tuples: [tuple("doc:1#viewer@user:1")],
          attributes: [attr("doc:1$public", bool(true)), bad],
        }),
      ).rejects.toMatchObject({ code: "ERROR_CODE_VALIDATION" });
      const emptyRelation = { ...tuple("doc:1#viewer@user:1"), relation: "" };
      await expect(
        s.write("t1", { tuples: [tuple("doc:2#viewer@user:1"), emptyRelation] }),
      ).rejects.toMatchObject({
        code: "ERROR_CODE_VALIDATION",
      });
      expect(await s.headSnap("t1")).toBe(head);
      const snap = await s.write("t1", {});
      expect((await s.readTuples("t1", snap, {}, 100)).items).toEqual([]);
      expect((await s.readAttributes("t1", snap, {}, 100)).items).toEqual([]);
      expect(await s.changes("t1", 0, 100)).toEqual([]);
    });

    it("typed attribute values round-trip exactly", async () => {
      const values: Attribute[] = [
        attr("doc:1$b", { type: "ATTRIBUTE_TYPE_BOOLEAN", data: false }),
        attr("doc:1$ba", { type: "ATTRIBUTE_TYPE_BOOLEAN_ARRAY", data: [true, false] }),
        attr("doc:1$s", { type: "ATTRIBUTE_TYPE_STRING", data: 'héllo "quoted" 🙂' }),
        attr("doc:1$sa", { type: "ATTRIBUTE_TYPE_STRING_ARRAY", data: [] }),
        attr("doc:1$i", { type: "ATTRIBUTE_TYPE_INTEGER", data: -7 }),
        attr("doc:1$ia", { type: "ATTRIBUTE_TYPE_INTEGER_ARRAY", data: [1, 2, 2147483647] }),
        attr("doc:1$d", { type: "ATTRIBUTE_TYPE_DOUBLE", data: 2 }),
        attr("doc:1$da", { type: "ATTRIBUTE_TYPE_DOUBLE_ARRAY", data: [0.1, 1e-9, -3.5] }),
      ];
      const snap = await h.store.write("t1", { attributes: values });
      const names = values.map((v) => v.attribute);
      const got = await h.store.queryAttributes("t1", snap, [
        { entityType: "doc", entityIds: ["1"], attributes: names },
      ]);
      const byName = new Map(got.map((a) => [a.attribute, a]));
      for (const v of values) expect(byName.get(v.attribute)).toEqual(v);
    });
  });

  describe("engine reads", () => {
    const seed = () =>
      h.store.write("t1", {
        tuples: [
          "doc:1#viewer@user:1",
          "doc:1#viewer@group:g#member",
          "doc:1#viewer@group:g",
          "doc:1#owner@user:2",
          "doc:2#viewer@user:1",
          "folder:f#viewer@user:1",
          "group:g#member@user:3",
        ].map(tuple),
        attributes: [
          attr("doc:1$public", bool(true)),
          attr("doc:3$public", bool(false)),
          attr("doc:1$level", int(4)),
        ],
      });

    it("queryTuples answers a batch of queries in one call", async () => {
      const snap = await seed();
      const got = await h.store.queryTuples("t1", snap, [
        { entityType: "doc", entityIds: ["1", "2", "9"], relations: ["viewer"] },
        { entityType: "group", entityIds: ["g"], relations: ["member", "admin"] },
      ]);
      expect(keys(got)).toEqual([
        "doc:1#viewer@group:g",
        "doc:1#viewer@group:g#member",
        "doc:1#viewer@user:1",
        "doc:2#viewer@user:1",
        "group:g#member@user:3",
      ]);
      expect(await h.store.queryTuples("t1", snap, [])).toEqual([]);
    });

    it("queryTuplesAndAttributes (where a store has it) answers exactly what the two separate reads answer", async () => {
      const s = h.store;
      if (s.queryTuplesAndAttributes === undefined) return;
      const first = await seed();
      const second = await s.write("t1", {
        deleteTuples: [tuple("doc:1#viewer@user:1")],
        attributes: [attr("doc:1$public", bool(false)), attr("doc:2$level", int(7))],
      });
      const tupleQueries = [
        { entityType: "doc", entityIds: ["1", "2"], relations: ["viewer", "owner"] },
        { entityType: "group", entityIds: ["g"], relations: ["member"] },
      ];
      const attributeQueries = [
        { entityType: "doc", entityIds: ["1", "2", "3"], attributes: ["public", "level"] },
        { entityType: "doc", attributes: ["level"] },
      ];
      for (const snap of [first, second]) {
        const [tuples, attributes] = await s.queryTuplesAndAttributes(
          "t1",
          snap,
          tupleQueries,
          attributeQueries,
        );
        expect(keys(tuples)).toEqual(keys(await s.queryTuples("t1", snap, tupleQueries)));
        const byKey = (list: readonly Attribute[]) =>
          list.map((a) => `${a.entity.id}$${a.attribute}=${JSON.stringify(a.value)}`).sort();
        expect(byKey(attributes)).toEqual(byKey(await s.queryAttributes("t1", snap, attributeQueries)));
        expect(attributes.length).toBeGreaterThan(0);
      }
      expect(await s.queryTuplesAndAttributes("t1", second, [], [])).toEqual([[], []]);
    });

    it("large batches (hundreds of keys) answer every key", async () => {
      const ids = Array.from({ length: 600 }, (_, i) => String(i));
      const snap = await h.store.write("t1", {
        tuples: ids.map((id) => tuple(`doc:${id}#viewer@user:${id}`)),
        attributes: ids.map((id) => attr(`doc:${id}$level`, int(Number(id)))),
      });
      const byEntity = await h.store.queryTuples("t1", snap, [
        { entityType: "doc", entityIds: ids, relations: ["viewer"] },
      ]);
      expect(byEntity).toHaveLength(600);
      const bySubject = await h.store.querySubjectTuples("t1", snap, [
        {
          entityType: "doc",
          relations: ["viewer"],
          subjectType: "user",
          subjectIds: ids,
          subjectRelation: "",
        },
      ]);
      expect(keys(bySubject)).toEqual(keys(byEntity));
      const levels = await h.store.queryAttributes("t1", snap, [
        { entityType: "doc", entityIds: ids, attributes: ["level"] },
      ]);
      expect(levels.map((a) => a.value.data).sort((a, b) => Number(a) - Number(b))).toEqual(ids.map(Number));
    });

    it("querySubjectTuples distinguishes direct subjects from subject sets", async () => {
      const snap = await seed();
      const direct = await h.store.querySubjectTuples("t1", snap, [
        {
          entityType: "doc",
          relations: ["viewer", "owner"],
          subjectType: "group",
          subjectIds: ["g"],
          subjectRelation: "",
        },
      ]);
      expect(keys(direct)).toEqual(["doc:1#viewer@group:g"]);
      const batch = await h.store.querySubjectTuples("t1", snap, [
        {
          entityType: "doc",
          relations: ["viewer"],
          subjectType: "group",
          subjectIds: ["g"],
          subjectRelation: "member",
        },
        {
          entityType: "doc",
          relations: ["viewer"],
          subjectType: "user",
          subjectIds: ["1", "2"],
          subjectRelation: "",
        },
        {
          entityType: "folder",
          relations: ["viewer"],
          subjectType: "user",
          subjectIds: ["1"],
          subjectRelation: "",
        },
      ]);
      expect(keys(batch)).toEqual([
        "doc:1#viewer@group:g#member",
        "doc:1#viewer@user:1",
        "doc:2#viewer@user:1",
        "folder:f#viewer@user:1",
      ]);
    });

    it("queryAttributes with and without entity ids", async () => {
      const snap = await seed();
      const some = await h.store.queryAttributes("t1", snap, [
        { entityType: "doc", entityIds: ["1", "2"], attributes: ["public"] },
      ]);
      expect(some).toEqual([attr("doc:1$public", bool(true))]);
      const all = await h.store.queryAttributes("t1", snap, [
        { entityType: "doc", attributes: ["public"] },
        { entityType: "doc", entityIds: ["1"], attributes: ["level"] },
      ]);
      const sorted = [...all].sort((a, b) =>
        `${a.entity.id}${a.attribute}`.localeCompare(`${b.entity.id}${b.attribute}`),
      );
      expect(sorted).toEqual([
        attr("doc:1$level", int(4)),
        attr("doc:1$public", bool(true)),
        attr("doc:3$public", bool(false)),
      ]);
    });

    it("listObjectIds collects entity, subject and attribute ids, sorted and distinct", async () => {
      const snap = await seed();
      expect(await h.store.listObjectIds("t1", snap, "doc")).toEqual(["1", "2", "3"]);
      expect(await h.store.listObjectIds("t1", snap, "user")).toEqual(["1", "2", "3"]);
      expect(await h.store.listObjectIds("t1", snap, "group")).toEqual(["g"]);
      expect(await h.store.listObjectIds("t1", snap, "team")).toEqual([]);
      const later = await h.store.write("t1", { deleteTupleFilters: [{ entity: { type: "doc" } }] });
      expect(await h.store.listObjectIds("t1", later, "user")).toEqual(["1", "3"]);
      expect(await h.store.listObjectIds("t1", snap, "user")).toEqual(["1", "2", "3"]);
    });

    it("tenants are isolated", async () => {
      const s = h.store;
      await s.createTenant("b", "B");
      await s.write("t1", {
        tuples: [tuple("doc:1#viewer@user:1")],
        attributes: [attr("doc:1$public", bool(true))],
      });
      const snap = await s.write("b", { tuples: [tuple("doc:2#viewer@user:2")] });
      const bView = await s.queryTuples("b", snap, [
        { entityType: "doc", entityIds: ["1", "2"], relations: ["viewer"] },
      ]);
      expect(keys(bView)).toEqual(["doc:2#viewer@user:2"]);
      expect(await s.queryAttributes("b", snap, [{ entityType: "doc", attributes: ["public"] }])).toEqual([]);
      expect(await s.listObjectIds("b", snap, "user")).toEqual(["2"]);
      const del = await s.write("b", { deleteTupleFilters: [{ entity: { type: "doc" } }] });
      expect(keys((await s.readTuples("t1", del, {}, 10)).items)).toEqual(["doc:1#viewer@user:1"]);
      expect((await s.readTuples("b", del, {}, 10)).items).toEqual([]);
    });
  });
}
