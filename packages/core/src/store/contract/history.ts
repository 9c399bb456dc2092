/** Contract: reads at old snaps, paged reads with cursors, the change feed and garbage collection. */
import { describe, expect, it } from "vitest";
import type { Tuple } from "../../model.ts";
import { hasRowCounts } from "../capabilities.ts";
import { attr, keys, tuple } from "../testing/fixtures.ts";
import type { StoreHandle } from "./handle.ts";

const str = (data: string) => ({ type: "ATTRIBUTE_TYPE_STRING" as const, data });
/** An evaluation time well after the epoch (as in the expiry contract): rows expire relative to it. */
const T0 = Date.UTC(2030, 0, 1);
const viewers = (ids: string[]) => [{ entityType: "doc", entityIds: ids, relations: ["viewer"] }];

export function describeHistoryContract(h: StoreHandle): void {
  describe("snapshots", () => {
    it("a read at an old snap sees exactly that snapshot", async () => {
      const s = h.store;
      const s1 = await s.write("t1", {
        tuples: [tuple("doc:1#viewer@user:1"), tuple("doc:1#viewer@user:2")],
        attributes: [attr("doc:1$color", str("red"))],
      });
      const s2 = await s.write("t1", {
        deleteTuples: [tuple("doc:1#viewer@user:1")],
        tuples: [tuple("doc:1#viewer@user:3")],
        attributes: [attr("doc:1$color", str("blue"))],
      });
      const s3 = await s.write("t1", {
        tuples: [tuple("doc:1#viewer@user:1")],
        deleteAttributes: [{ entity: { type: "doc", id: "1" }, attribute: "color" }],
      });
      const at = async (snap: number) => keys(await s.queryTuples("t1", snap, viewers(["1"])));
      expect(await at(s1 - 1)).toEqual([]);
      expect(await at(s1)).toEqual(["doc:1#viewer@user:1", "doc:1#viewer@user:2"]);
      expect(await at(s2)).toEqual(["doc:1#viewer@user:2", "doc:1#viewer@user:3"]);
      expect(await at(s3)).toEqual(["doc:1#viewer@user:1", "doc:1#viewer@user:2", "doc:1#viewer@user:3"]);
      const color = async (snap: number) =>
        (await s.queryAttributes("t1", snap, [{ entityType: "doc", attributes: ["color"] }])).map(
          (a) => a.value.data,
        );
      expect(await color(s1)).toEqual(["red"]);
      expect(await color(s2)).toEqual(["blue"]);
      expect(await color(s3)).toEqual([]);
      const subjects = await s.querySubjectTuples("t1", s2, [
        {
          entityType: "doc",
          relations: ["viewer"],
          subjectType: "user",
          subjectIds: ["1", "3"],
          subjectRelation: "",
        },
      ]);
      expect(keys(subjects)).toEqual(["doc:1#viewer@user:3"]);
      expect(keys((await s.readTuples("t1", s2, {}, 100)).items)).toEqual([
        "doc:1#viewer@user:2",
        "doc:1#viewer@user:3",
      ]);
      expect((await s.readAttributes("t1", s1, {}, 100)).items).toEqual([attr("doc:1$color", str("red"))]);
    });
  });

  describe("paged reads", () => {
    it("readTuples pages cover every matching row exactly once in a stable order", async () => {
      const s = h.store;
      const all = Array.from({ length: 7 }, (_, i) => tuple(`doc:${i}#viewer@user:${i % 2}`));
      const snap = await s.write("t1", { tuples: [...all, tuple("folder:1#viewer@user:0")] });
      const seen: Tuple[] = [];
      let cursor: string | undefined;
      const sizes: number[] = [];
      do {
        const page = await s.readTuples("t1", snap, { entity: { type: "doc" } }, 3, cursor);
        seen.push(...page.items);
        sizes.push(page.items.length);
        cursor = page.cursor || undefined;
      } while (cursor);
      expect(sizes).toEqual([3, 3, 1]);
      expect(seen).toEqual(all);
      const again = await s.readTuples("t1", snap, { entity: { type: "doc" } }, 3);
      expect(again.items).toEqual(all.slice(0, 3));
    });

    it("readTuples filters by entity ids, relation and subject", async () => {
      const s = h.store;
      const snap = await s.write("t1", {
        tuples: [
          "doc:1#viewer@user:1",
          "doc:2#viewer@group:g#member",
          "doc:2#owner@user:1",
          "doc:3#viewer@user:2",
        ].map(tuple),
      });
      const read = async (f: Parameters<typeof s.readTuples>[2]) =>
        keys((await s.readTuples("t1", snap, f, 100)).items);
      expect(await read({ entity: { type: "doc", ids: ["2", "3"] }, relation: "viewer" })).toEqual([
        "doc:2#viewer@group:g#member",
        "doc:3#viewer@user:2",
      ]);
      expect(await read({ subject: { type: "user", ids: ["1"] } })).toEqual([
        "doc:1#viewer@user:1",
        "doc:2#owner@user:1",
      ]);
      expect(await read({ subject: { type: "group", relation: "member" } })).toEqual([
        "doc:2#viewer@group:g#member",
      ]);
      await expect(s.readTuples("t1", snap, {}, 2, "%%%")).rejects.toMatchObject({
        code: "ERROR_CODE_INVALID_CONTINUOUS_TOKEN",
      });
    });

    it("countTuples / countAttributes (where a store has them) count what the filtered paged reads return", async () => {
      const s = h.store;
      if (!hasRowCounts(s)) return;
      const s1 = await s.write("t1", {
        tuples: [
          "doc:1#viewer@user:1",
          "doc:2#viewer@group:g#member",
          "doc:2#owner@user:1",
          "doc:3#viewer@user:2",
          "folder:1#viewer@user:1",
        ].map(tuple),
        attributes: ["doc:1$a", "doc:2$a", "doc:2$b", "folder:1$a"].map((k) => attr(k, str(k))),
      });
      const s2 = await s.write("t1", {
        deleteTuples: [tuple("doc:1#viewer@user:1")],
        tuples: [{ ...tuple("doc:4#viewer@user:1"), expiresAt: T0 + 5000 }],
        deleteAttributes: [{ entity: { type: "doc", id: "1" }, attribute: "a" }],
        attributes: [{ ...attr("doc:3$a", str("x")), expiresAt: T0 + 5000 }],
      });
      const tupleFilters: Parameters<typeof s.readTuples>[2][] = [
        {},
        { entity: { type: "doc" } },
        { entity: { type: "doc" }, relation: "viewer" },
        { entity: { type: "doc", ids: ["2", "4"] } },
        { subject: { type: "user" } },
        { subject: { type: "group", relation: "member" } },
        { entity: { type: "doc" }, subject: { type: "user", ids: ["1"] } },
        { entity: { type: "nothing" } },
      ];
      const attributeFilters: Parameters<typeof s.readAttributes>[2][] = [
        {},
        { entity: { type: "doc" } },
        { entity: { type: "doc" }, attributes: ["a"] },
        { entity: { type: "doc", ids: ["2", "3"] }, attributes: ["a", "b"] },
      ];
      let counted = 0;
      for (const snap of [s1, s2]) {
        for (const at of [T0 + 1000, T0 + 5000]) {
          for (const f of tupleFilters) {
            const rows = (await s.readTuples("t1", snap, f, 100, undefined, at)).items.length;
            expect(await s.countTuples("t1", snap, f, at)).toBe(rows);
            counted += rows;
          }
          for (const f of attributeFilters) {
            const rows = (await s.readAttributes("t1", snap, f, 100, undefined, at)).items.length;
            expect(await s.countAttributes("t1", snap, f, at)).toBe(rows);
            counted += rows;
          }
        }
      }
      // the filters and snaps above count rows (not only zeros), and the deleted and expired ones are gone
      expect(counted).toBeGreaterThan(40);
      expect(await s.countTuples("t1", s2, { entity: { type: "doc" }, relation: "viewer" }, T0 + 1000)).toBe(
        3,
      );
      expect(await s.countTuples("t1", s2, { entity: { type: "doc" }, relation: "viewer" }, T0 + 5000)).toBe(
        2,
      );
      expect(await s.countAttributes("t1", s2, { entity: { type: "doc" } }, T0 + 5000)).toBe(2);
    });

    it("readAttributes filters and pages", async () => {
      const s = h.store;
      const written = ["doc:1$a", "doc:1$b", "doc:2$a", "doc:3$a", "folder:1$a"].map((k) => attr(k, str(k)));
      const snap = await s.write("t1", { attributes: written });
      const p1 = await s.readAttributes("t1", snap, { entity: { type: "doc" }, attributes: ["a"] }, 2);
      const p2 = await s.readAttributes(
        "t1",
        snap,
        { entity: { type: "doc" }, attributes: ["a"] },
        2,
        p1.cursor,
      );
      expect([...p1.items, ...p2.items]).toEqual([written[0], written[2], written[3]]);
      expect(p2.cursor).toBe("");
      const byId = await s.readAttributes("t1", snap, { entity: { type: "doc", ids: ["1"] } }, 10);
      expect(byId.items).toEqual([written[0], written[1]]);
    });
  });

  describe("changes", () => {
    it("the feed lists change sets after a snap, oldest first, deletes before creates", async () => {
      const s = h.store;
      const s1 = await s.write("t1", {
        tuples: [tuple("doc:1#viewer@user:1"), tuple("doc:1#viewer@user:2")],
      });
      await s.write("t1", { tuples: [tuple("doc:1#viewer@user:1")] }); // no-op: no change set
      const s3 = await s.write("t1", {
        deleteTuples: [tuple("doc:1#viewer@user:1")],
        attributes: [attr("doc:1$color", str("red"))],
      });
      const s4 = await s.write("t1", { attributes: [attr("doc:1$color", str("blue"))] });
      const feed = await s.changes("t1", 0, 10);
      expect(feed).toEqual([
        {
          snap: s1,
          changes: [
            { operation: "OPERATION_CREATE", tuple: tuple("doc:1#viewer@user:1") },
            { operation: "OPERATION_CREATE", tuple: tuple("doc:1#viewer@user:2") },
          ],
        },
        {
          snap: s3,
          changes: [
            { operation: "OPERATION_DELETE", tuple: tuple("doc:1#viewer@user:1") },
            { operation: "OPERATION_CREATE", attribute: attr("doc:1$color", str("red")) },
          ],
        },
        {
          snap: s4,
          changes: [
            { operation: "OPERATION_DELETE", attribute: attr("doc:1$color", str("red")) },
            { operation: "OPERATION_CREATE", attribute: attr("doc:1$color", str("blue")) },
          ],
        },
      ]);
      expect((await s.changes("t1", s1, 1)).map((c) => c.snap)).toEqual([s3]);
      expect(await s.changes("t1", s4, 10)).toEqual([]);
      await s.createTenant("b", "B");
      expect(await s.changes("b", 0, 10)).toEqual([]);
    });
  });

  describe("gc", () => {
    it("removes rows deleted before the cutoff and expires older snaps", async () => {
      const s = h.store;
      const s1 = await s.write("t1", {
        tuples: [tuple("doc:1#viewer@user:1"), tuple("doc:1#viewer@user:2")],
      });
      const s2 = await s.write("t1", { deleteTuples: [tuple("doc:1#viewer@user:1")] });
      const s3 = await s.write("t1", { attributes: [attr("doc:1$color", str("red"))] });
      expect(await s.gc(new Date(Date.now() - 60_000))).toBe(0);
      await s.assertSnapReadable("t1", s1);
      expect(await s.gc(new Date(Date.now() + 60_000))).toBe(1);
      await expect(Promise.resolve().then(() => s.assertSnapReadable("t1", s1))).rejects.toMatchObject({
        code: "ERROR_CODE_SNAP_TOKEN_EXPIRED",
      });
      await expect(Promise.resolve().then(() => s.assertSnapReadable("t1", s2))).rejects.toMatchObject({
        code: "ERROR_CODE_SNAP_TOKEN_EXPIRED",
      });
      await s.assertSnapReadable("t1", s3);
      expect(keys(await s.queryTuples("t1", s3, viewers(["1"])))).toEqual(["doc:1#viewer@user:2"]);
      expect((await s.changes("t1", 0, 10)).map((c) => c.snap)).toEqual([]);
      const s4 = await s.write("t1", { tuples: [tuple("doc:2#viewer@user:1")] });
      await s.assertSnapReadable("t1", s4);
      expect((await s.changes("t1", s3, 10)).map((c) => c.snap)).toEqual([s4]);
    });
  });
}
