import { describe, expect, it } from "vitest";
import { fixture } from "./testing.ts";

const GROUPS = `
entity user {}
entity group {
  relation member @user @group#member
}
entity folder {
  relation parent @folder
  relation viewer @user
  permission view = viewer or parent.view
}
entity doc {
  relation a @user
  permission p = a or p
  permission q = a and q
  permission r = a not r
}`;

describe("cycles in data and schema are DENIED, never a depth error or a hang", () => {
  const groupLoop = [
    "group:1#member@group:2#member",
    "group:2#member@group:3#member",
    "group:3#member@group:1#member",
    "group:2#member@user:alice",
    "group:3#member@group:4#member",
    "group:4#member@user:bob",
  ];

  it("a member reachable through the cycle is ALLOWED from every group of it", async () => {
    const f = await fixture(GROUPS, groupLoop);
    for (const g of ["group:1", "group:2", "group:3"]) {
      expect(await f.can(g, "member", "user:alice", { depth: 10 })).toBe(true);
      expect(await f.can(g, "member", "user:bob", { depth: 10 })).toBe(true);
    }
    expect(await f.can("group:4", "member", "user:alice", { depth: 10 })).toBe(false);
  });

  it("a subject not reachable is DENIED (not a depth error), deterministically over 20 runs", async () => {
    const f = await fixture(GROUPS, groupLoop);
    const answers = new Set<boolean>();
    for (let i = 0; i < 20; i++) answers.add(await f.can("group:1", "member", "user:carol", { depth: 10 }));
    expect([...answers]).toEqual([false]);
  });

  it("memoized results from a cut cycle do not poison other paths in one bulk evaluation", async () => {
    const f = await fixture(GROUPS, groupLoop);
    const { bulkCheck } = await import("./check.ts");
    const subject = { type: "user", id: "alice", relation: "" };
    const out = await bulkCheck(
      f.compiled,
      f.target({ depth: 10 }),
      ["1", "3", "2", "1", "3"].map((id) => ({
        entity: { type: "group", id },
        permission: "member",
        subject,
      })),
    );
    expect(out.map((o) => o.can)).toEqual(Array(5).fill("CHECK_RESULT_ALLOWED"));
  });

  it("a folder that is its own parent, and a parent loop", async () => {
    const f = await fixture(GROUPS, [
      "folder:4#parent@folder:4",
      "folder:5#parent@folder:6",
      "folder:6#parent@folder:5",
      "folder:6#viewer@user:1",
    ]);
    expect(await f.can("folder:4", "view", "user:1", { depth: 5 })).toBe(false);
    expect(await f.can("folder:5", "view", "user:1", { depth: 5 })).toBe(true);
    expect(await f.can("folder:5", "view", "user:2", { depth: 5 })).toBe(false);
  });

  it("self-referencing permissions take the least fixpoint", async () => {
    const f = await fixture(GROUPS, ["doc:1#a@user:1"]);
    expect(await f.can("doc:1", "p", "user:1")).toBe(true);
    expect(await f.can("doc:1", "p", "user:2")).toBe(false);
    expect(await f.can("doc:1", "q", "user:1")).toBe(false);
    // r = a not r: with r cut to DENIED on the path, r = a.
    expect(await f.can("doc:1", "r", "user:1")).toBe(true);
    expect(await f.can("doc:1", "r", "user:2")).toBe(false);
  });
});
