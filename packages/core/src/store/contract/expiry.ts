/**
 * Contract: expiring tuples and attributes (Pemba extension). Every read takes an evaluation time `at` and sees a
 * row only while `at < expiresAt`; `at = 0` sees every row. Rewriting a row with another expiry replaces it.
 */
import { describe, expect, it } from "vitest";
import type { Attribute, Tuple } from "../../model.ts";
import { hasCombinedReads } from "../capabilities.ts";
import { attr, keys, tuple } from "../testing/fixtures.ts";
import type { StoreHandle } from "./handle.ts";

/** An evaluation time well after the epoch; rows expire relative to it. */
const T0 = Date.UTC(2030, 0, 1);
const bool = (data: boolean) => ({ type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data });
const expiring = (key: string, expiresAt: number): Tuple => ({ ...tuple(key), expiresAt });
const expiringAttr = (key: string, data: boolean, expiresAt: number): Attribute => ({
  ...attr(key, bool(data)),
  expiresAt,
});

export function describeExpiryContract(h: StoreHandle): void {
  describe("expiry", () => {
    it("an expired tuple is absent from every tuple read from its expiry on, present before it", async () => {
      const s = h.store;
      const snap = await s.write("t1", {
        tuples: [
          expiring("doc:1#viewer@user:a", T0 + 1000),
          tuple("doc:1#viewer@user:b"),
          expiring("doc:2#viewer@user:a", T0 + 5000),
        ],
      });
      const byEntity = [{ entityType: "doc", entityIds: ["1", "2"], relations: ["viewer"] }];
      const bySubject = [
        {
          entityType: "doc",
          relations: ["viewer"],
          subjectType: "user",
          subjectIds: ["a"],
          subjectRelation: "",
        },
      ];
      const visible = async (at: number) => ({
        query: keys(await s.queryTuples("t1", snap, byEntity, at)),
        subject: keys(await s.querySubjectTuples("t1", snap, bySubject, at)),
        read: keys((await s.readTuples("t1", snap, {}, 100, undefined, at)).items),
        users: await s.listObjectIds("t1", snap, "user", at),
        docs: await s.listObjectIds("t1", snap, "doc", at),
      });
      const all = ["doc:1#viewer@user:a", "doc:1#viewer@user:b", "doc:2#viewer@user:a"];
      expect(await visible(T0 + 999)).toEqual({
        query: all,
        subject: ["doc:1#viewer@user:a", "doc:2#viewer@user:a"],
        read: all,
        users: ["a", "b"],
        docs: ["1", "2"],
      });
      // the expiry instant itself is no longer before it
      expect(await visible(T0 + 1000)).toEqual({
        query: ["doc:1#viewer@user:b", "doc:2#viewer@user:a"],
        subject: ["doc:2#viewer@user:a"],
        read: ["doc:1#viewer@user:b", "doc:2#viewer@user:a"],
        users: ["a", "b"],
        docs: ["1", "2"],
      });
      expect(await visible(T0 + 5000)).toEqual({
        query: ["doc:1#viewer@user:b"],
        subject: [],
        read: ["doc:1#viewer@user:b"],
        users: ["b"],
        docs: ["1"],
      });
      // at 0: every row (the replica's load)
      expect(keys((await s.readTuples("t1", snap, {}, 100, undefined, 0)).items)).toEqual(all);
    });

    it("paged reads and the change feed carry expiresAt; rows without one have none", async () => {
      const s = h.store;
      const before = await s.headSnap("t1");
      const snap = await s.write("t1", {
        tuples: [expiring("doc:1#viewer@user:a", T0 + 1000), tuple("doc:1#viewer@user:b")],
        attributes: [expiringAttr("doc:1$public", true, T0 + 2000)],
      });
      const page = await s.readTuples("t1", snap, {}, 100, undefined, T0);
      expect(page.items).toEqual([expiring("doc:1#viewer@user:a", T0 + 1000), tuple("doc:1#viewer@user:b")]);
      expect(page.items[1]).not.toHaveProperty("expiresAt");
      expect((await s.readAttributes("t1", snap, {}, 100, undefined, T0)).items).toEqual([
        expiringAttr("doc:1$public", true, T0 + 2000),
      ]);
      const [set] = await s.changes("t1", before, 10);
      expect(set?.changes).toEqual([
        { operation: "OPERATION_CREATE", tuple: expiring("doc:1#viewer@user:a", T0 + 1000) },
        { operation: "OPERATION_CREATE", tuple: tuple("doc:1#viewer@user:b") },
        { operation: "OPERATION_CREATE", attribute: expiringAttr("doc:1$public", true, T0 + 2000) },
      ]);
    });

    it("an expired attribute is absent from attribute reads by id, by type and paged", async () => {
      const s = h.store;
      const snap = await s.write("t1", {
        attributes: [expiringAttr("doc:1$public", true, T0 + 1000), attr("doc:2$public", bool(false))],
      });
      const byId = [{ entityType: "doc", entityIds: ["1", "2"], attributes: ["public"] }];
      const byType = [{ entityType: "doc", attributes: ["public"] }];
      const names = (rows: readonly Attribute[]) => rows.map((a) => `${a.entity.id}=${a.value.data}`).sort();
      expect(names(await s.queryAttributes("t1", snap, byId, T0 + 999))).toEqual(["1=true", "2=false"]);
      expect(names(await s.queryAttributes("t1", snap, byType, T0 + 999))).toEqual(["1=true", "2=false"]);
      expect(names(await s.queryAttributes("t1", snap, byId, T0 + 1000))).toEqual(["2=false"]);
      expect(names(await s.queryAttributes("t1", snap, byType, T0 + 1000))).toEqual(["2=false"]);
      expect(names((await s.readAttributes("t1", snap, {}, 100, undefined, T0 + 1000)).items)).toEqual([
        "2=false",
      ]);
      expect(await s.listObjectIds("t1", snap, "doc", T0 + 1000)).toEqual(["2"]);
      if (hasCombinedReads(s)) {
        const tq = [{ entityType: "doc", entityIds: ["1"], relations: ["viewer"] }];
        const [, a] = await s.queryTuplesAndAttributes("t1", snap, tq, byId, T0 + 1000);
        expect(names(a)).toEqual(["2=false"]);
      }
    });

    it("rewriting a tuple with another expiry replaces it; the same expiry is a no-op; none makes it permanent", async () => {
      const s = h.store;
      const q = [{ entityType: "doc", entityIds: ["1"], relations: ["viewer"] }];
      const first = await s.write("t1", { tuples: [expiring("doc:1#viewer@user:a", T0 + 1000)] });
      const same = await s.write("t1", { tuples: [expiring("doc:1#viewer@user:a", T0 + 1000)] });
      expect(await s.changes("t1", first, 10)).toEqual([]);
      // extended: visible after the first expiry, not after the second
      const extended = await s.write("t1", { tuples: [expiring("doc:1#viewer@user:a", T0 + 9000)] });
      expect(await s.changes("t1", same, 10)).toEqual([
        {
          snap: extended,
          changes: [
            { operation: "OPERATION_DELETE", tuple: expiring("doc:1#viewer@user:a", T0 + 1000) },
            { operation: "OPERATION_CREATE", tuple: expiring("doc:1#viewer@user:a", T0 + 9000) },
          ],
        },
      ]);
      expect(keys(await s.queryTuples("t1", extended, q, T0 + 5000))).toEqual(["doc:1#viewer@user:a"]);
      expect(keys(await s.queryTuples("t1", extended, q, T0 + 9000))).toEqual([]);
      // the old snap still answers with the old expiry
      expect(keys(await s.queryTuples("t1", first, q, T0 + 5000))).toEqual([]);
      // written again without expiry (after it expired): permanent
      const permanent = await s.write("t1", { tuples: [tuple("doc:1#viewer@user:a")] });
      expect(keys(await s.queryTuples("t1", permanent, q, T0 + 99_000))).toEqual(["doc:1#viewer@user:a"]);
      expect((await s.readTuples("t1", permanent, {}, 100, undefined, 0)).items).toEqual([
        tuple("doc:1#viewer@user:a"),
      ]);
      // and a permanent tuple written again without expiry stays a no-op
      const again = await s.write("t1", { tuples: [tuple("doc:1#viewer@user:a")] });
      expect(await s.changes("t1", permanent, 10)).toEqual([]);
      expect(again).toBeGreaterThan(permanent);
    });

    it("in a tenant with no expiring row: a permanent tuple written again is a no-op, written with an expiry is replaced", async () => {
      const s = h.store;
      const base = await s.write("t1", {
        tuples: [tuple("doc:1#viewer@user:a"), tuple("doc:1#viewer@user:b")],
      });
      const same = await s.write("t1", {
        tuples: [tuple("doc:1#viewer@user:b"), tuple("doc:1#viewer@user:a")],
      });
      expect(await s.changes("t1", base, 10)).toEqual([]);
      const expiringNow = await s.write("t1", {
        tuples: [expiring("doc:1#viewer@user:a", T0 + 1000), tuple("doc:1#viewer@user:b")],
      });
      expect(await s.changes("t1", same, 10)).toEqual([
        {
          snap: expiringNow,
          changes: [
            { operation: "OPERATION_DELETE", tuple: tuple("doc:1#viewer@user:a") },
            { operation: "OPERATION_CREATE", tuple: expiring("doc:1#viewer@user:a", T0 + 1000) },
          ],
        },
      ]);
      const all = await s.readTuples("t1", expiringNow, {}, 100, undefined, 0);
      expect(all.items.map((t) => `${keys([t])[0]} ${t.expiresAt ?? "-"}`).sort()).toEqual([
        `doc:1#viewer@user:a ${T0 + 1000}`,
        "doc:1#viewer@user:b -",
      ]);
    });

    it("one write of new, re-expiring, unchanged and newly expiring tuples: only the changed ones are replaced", async () => {
      const s = h.store;
      const base = await s.write("t1", {
        tuples: [
          expiring("doc:1#viewer@user:a", T0 + 1000),
          expiring("doc:1#viewer@user:b", T0 + 1000),
          tuple("doc:1#viewer@user:c"),
          tuple("doc:1#viewer@user:d"),
        ],
      });
      const mixed = await s.write("t1", {
        tuples: [
          tuple("doc:1#viewer@user:new"),
          expiring("doc:1#viewer@user:a", T0 + 5000),
          expiring("doc:1#viewer@user:b", T0 + 1000),
          expiring("doc:1#viewer@user:c", T0 + 7000),
          tuple("doc:1#viewer@user:d"),
        ],
      });
      const [set] = await s.changes("t1", base, 10);
      expect(set!.snap).toBe(mixed);
      const sorted = (changes: { operation: string; tuple?: Tuple }[]) =>
        changes.map((c) => `${c.operation} ${keys([c.tuple!])[0]} ${c.tuple!.expiresAt ?? "-"}`).sort();
      expect(sorted(set!.changes)).toEqual([
        `OPERATION_CREATE doc:1#viewer@user:a ${T0 + 5000}`,
        `OPERATION_CREATE doc:1#viewer@user:c ${T0 + 7000}`,
        "OPERATION_CREATE doc:1#viewer@user:new -",
        `OPERATION_DELETE doc:1#viewer@user:a ${T0 + 1000}`,
        "OPERATION_DELETE doc:1#viewer@user:c -",
      ]);
      const all = await s.readTuples("t1", mixed, {}, 100, undefined, 0);
      expect(all.items.map((t) => `${keys([t])[0]} ${t.expiresAt ?? "-"}`).sort()).toEqual([
        `doc:1#viewer@user:a ${T0 + 5000}`,
        `doc:1#viewer@user:b ${T0 + 1000}`,
        `doc:1#viewer@user:c ${T0 + 7000}`,
        "doc:1#viewer@user:d -",
        "doc:1#viewer@user:new -",
      ]);
    });

    it("an attribute rewritten without expiry replaces an expiring value", async () => {
      const s = h.store;
      const q = [{ entityType: "doc", entityIds: ["1"], attributes: ["public"] }];
      await s.write("t1", { attributes: [expiringAttr("doc:1$public", true, T0 + 1000)] });
      const snap = await s.write("t1", { attributes: [attr("doc:1$public", bool(false))] });
      expect(await s.queryAttributes("t1", snap, q, T0 + 5000)).toEqual([attr("doc:1$public", bool(false))]);
    });

    it("nextExpiry and the sweep: expired rows become deletes in the change feed, then GC removes them", async () => {
      const s = h.store;
      expect(await s.nextExpiry("t1")).toBeUndefined();
      await s.write("t1", {
        tuples: [expiring("doc:1#viewer@user:a", T0 + 1000), tuple("doc:1#viewer@user:b")],
        attributes: [
          expiringAttr("doc:1$public", true, T0 + 500),
          expiringAttr("doc:2$public", true, T0 + 3000),
        ],
      });
      expect(await s.nextExpiry("t1")).toBe(T0 + 500);
      const before = await s.headSnap("t1");
      const swept = await s.write("t1", { expireUpTo: T0 + 1000 });
      expect(await s.changes("t1", before, 10)).toEqual([
        {
          snap: swept,
          changes: [
            { operation: "OPERATION_DELETE", tuple: expiring("doc:1#viewer@user:a", T0 + 1000) },
            { operation: "OPERATION_DELETE", attribute: expiringAttr("doc:1$public", true, T0 + 500) },
          ],
        },
      ]);
      expect(await s.nextExpiry("t1")).toBe(T0 + 3000);
      // gone at the sweep's snap even for a read that sees every row; still there before it
      expect(keys((await s.readTuples("t1", swept, {}, 100, undefined, 0)).items)).toEqual([
        "doc:1#viewer@user:b",
      ]);
      expect(keys((await s.readTuples("t1", before, {}, 100, undefined, 0)).items)).toHaveLength(2);
      // GC after the window: the swept rows are removed (and a sweep with nothing due deletes nothing)
      await new Promise((r) => setTimeout(r, 5));
      expect(await s.gc(new Date(Date.now() + 60_000))).toBe(2);
      expect((await s.readAttributes("t1", await s.headSnap("t1"), {}, 100, undefined, 0)).items).toEqual([
        expiringAttr("doc:2$public", true, T0 + 3000),
      ]);
    });
  });
}
