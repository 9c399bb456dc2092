/** The tenant -> database rule: stable, balanced, minimal moves when a database is added or removed, pins first. */
import { describe, expect, it } from "vitest";
import { seededRandom } from "../../../random.ts";
import { placementScore, rendezvous, TenantPlacement } from "./placement.ts";

const DBS = ["DB", "DB2", "DB3"];

/** 10,000 tenant names of two shapes: sequential (`tenant-0`...) and random ids of 6-20 characters. */
function names(shape: "sequential" | "random"): string[] {
  const random = seededRandom(19);
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_-";
  return Array.from({ length: 10_000 }, (_, i) => {
    if (shape === "sequential") return `tenant-${i}`;
    const length = 6 + Math.floor(random() * 15);
    let id = "";
    for (let k = 0; k < length; k++) id += alphabet[Math.floor(random() * alphabet.length)];
    return id;
  });
}

function spread(databases: string[], tenants: string[]): Map<string, number> {
  const counts = new Map(databases.map((d) => [d, 0]));
  for (const t of tenants) {
    const db = rendezvous(databases, t);
    counts.set(db, counts.get(db)! + 1);
  }
  return counts;
}

describe("tenant placement (rendezvous hashing)", () => {
  it("is a fixed function of the two names: these values never change (a change would move tenants)", () => {
    expect(placementScore("DB", "t1")).toBe(2110250678);
    expect(placementScore("DB2", "t1")).toBe(2165812019);
    expect(placementScore("DB3", "acme")).toBe(1602592916);
    expect(placementScore("", "")).toBe(91794203);
    expect(["t1", "acme", "tenant-42", "x"].map((t) => rendezvous(DBS, t))).toEqual(
      ["t1", "acme", "tenant-42", "x"].map((t) =>
        DBS.reduce((best, db) => (placementScore(db, t) > placementScore(best, t) ? db : best)),
      ),
    );
  });

  it("does not depend on the order the databases are listed in", () => {
    for (const t of names("random").slice(0, 2000)) {
      expect(rendezvous(["DB3", "DB", "DB2"], t)).toBe(rendezvous(DBS, t));
    }
  });

  for (const shape of ["sequential", "random"] as const) {
    it(`balances 10,000 ${shape} tenant names within 5% of an even share, over 2, 3 and 5 databases`, () => {
      const tenants = names(shape);
      for (const databases of [["DB", "DB2"], DBS, ["DB", "DB2", "DB3", "DB4", "DB5"]]) {
        const even = tenants.length / databases.length;
        for (const [db, n] of spread(databases, tenants)) {
          expect(Math.abs(n - even) / even, `${db}: ${n} of ${tenants.length}`).toBeLessThan(0.05);
        }
      }
    });
  }

  it("adding a database moves only tenants to it (about 1/N); removing one moves only its own", () => {
    const tenants = names("random");
    const before = tenants.map((t) => rendezvous(DBS, t));
    const added = tenants.map((t) => rendezvous([...DBS, "DB4"], t));
    const moved = tenants.filter((_, i) => added[i] !== before[i]);
    expect(tenants.every((_, i) => added[i] === before[i] || added[i] === "DB4")).toBe(true);
    expect(Math.abs(moved.length - 2500) / 2500).toBeLessThan(0.05);
    const removed = tenants.map((t) => rendezvous(["DB", "DB3"], t));
    expect(tenants.every((_, i) => before[i] === "DB2" || removed[i] === before[i])).toBe(true);
  });

  it("pins win over the hash; a pin to an unlisted database or a list with a repeat is refused", () => {
    const hashed = rendezvous(DBS, "acme");
    const other = DBS.find((d) => d !== hashed)!;
    const placement = new TenantPlacement({ databases: DBS, pinned: new Map([["acme", other]]) });
    expect(placement.databaseOf("acme")).toBe(other);
    expect(placement.isPinned("acme")).toBe(true);
    expect(placement.databaseOf("t1")).toBe(rendezvous(DBS, "t1"));
    expect(placement.isPinned("t1")).toBe(false);
    expect(new TenantPlacement({ databases: ["DB"] }).databaseOf("anything")).toBe("DB");
    expect(() => new TenantPlacement({ databases: DBS, pinned: new Map([["a", "DB9"]]) })).toThrow(
      "tenant a is pinned to DB9, which is not listed",
    );
    expect(() => new TenantPlacement({ databases: ["DB", "DB"] })).toThrow("a database is listed twice");
    expect(() => new TenantPlacement({ databases: [] })).toThrow("no database");
  });
});
