import { describe, expect, it } from "vitest";
import { parseTupleString } from "../schema/index.ts";
import { fixture } from "./testing.ts";

const OPS = `
entity user {}
entity doc {
  relation a @user
  relation b @user
  relation c @user
  permission u = a or b
  permission i = a and b
  permission x = a not b
  permission abc = a or b and c
  permission anotbor = a not b or c
  permission aornotb = a or b not c
}`;

const grants = (rels: string, id: string) => rels.split("").map((r) => `doc:${id}#${r}@user:1`);

describe("operators", () => {
  const cases: [string, boolean, boolean, boolean][] = [];
  for (const a of [false, true])
    for (const b of [false, true]) for (const c of [false, true]) cases.push(["", a, b, c]);
  it.each(cases)("truth table %s a=%s b=%s c=%s", async (_, a, b, c) => {
    const rels = `${a ? "a" : ""}${b ? "b" : ""}${c ? "c" : ""}`;
    const f = await fixture(OPS, grants(rels, "1"));
    expect(await f.can("doc:1", "u", "user:1")).toBe(a || b);
    expect(await f.can("doc:1", "i", "user:1")).toBe(a && b);
    expect(await f.can("doc:1", "x", "user:1")).toBe(a && !b);
    // equal precedence, left-assoc
    expect(await f.can("doc:1", "abc", "user:1")).toBe((a || b) && c);
    expect(await f.can("doc:1", "anotbor", "user:1")).toBe((a && !b) || c);
    expect(await f.can("doc:1", "aornotb", "user:1")).toBe((a || b) && !c);
  });
});

const DRIVE = `
entity user {}
entity group {
  relation member @user @group#member
}
entity folder {
  relation parent @folder
  relation viewer @user @group#member
  permission view = viewer or parent.view
}
entity doc {
  relation folder @folder
  relation owner @user
  permission view = owner or folder.view
}`;

describe("hops", () => {
  it("userset subjects are expanded and tuple-to-userset walks parents", async () => {
    const f = await fixture(DRIVE, [
      "group:eng#member@user:1",
      "group:all#member@group:eng#member",
      "folder:root#viewer@group:all#member",
      "folder:sub#parent@folder:root",
      "doc:1#folder@folder:sub",
      "doc:1#owner@user:9",
    ]);
    expect(await f.can("doc:1", "view", "user:1")).toBe(true);
    expect(await f.can("doc:1", "view", "user:9")).toBe(true);
    expect(await f.can("doc:1", "view", "user:2")).toBe(false);
    expect(await f.can("group:all", "member", "user:1")).toBe(true);
  });

  it("a userset subject is satisfied by an exact tuple or by the self rule", async () => {
    const f = await fixture(DRIVE, ["folder:1#viewer@group:eng#member"]);
    expect(await f.can("folder:1", "view", "group:eng#member")).toBe(true);
    expect(await f.can("group:eng", "member", "group:eng#member")).toBe(true);
    expect(await f.can("folder:1", "view", "group:ops#member")).toBe(false);
  });

  it("tuple-to-userset ignores the tuple's subject relation", async () => {
    const f = await fixture(
      `entity user {}
       entity org {
         relation admin @user
         relation member @user
       }
       entity repo {
         relation org @org
         permission read = org.member
       }`,
      ["org:1#member@user:5"],
    );
    // Contextual tuples are not validated against the schema, so a subject relation can reach the walk.
    const context = { tuples: [parseTupleString("repo:1#org@org:1#admin")] };
    expect(await f.can("repo:1", "read", "user:5", { context })).toBe(true);
    expect(await f.can("repo:1", "read", "user:6", { context })).toBe(false);
  });
});

describe("errors", () => {
  it("unknown permission and unknown entity type are SCHEMA_NOT_FOUND", async () => {
    const f = await fixture(DRIVE);
    await expect(f.can("doc:1", "nope", "user:1")).rejects.toMatchObject({
      code: "ERROR_CODE_SCHEMA_NOT_FOUND",
    });
    await expect(f.can("nope:1", "view", "user:1")).rejects.toMatchObject({
      code: "ERROR_CODE_SCHEMA_NOT_FOUND",
    });
  });

  it("a deep acyclic chain longer than depth is DEPTH_NOT_ENOUGH; enough depth answers", async () => {
    const chain = Array.from(
      { length: 12 },
      (_, i) => `folder:${"f".repeat(i + 2)}#parent@folder:${"f".repeat(i + 1)}`,
    );
    const f = await fixture(DRIVE, [...chain, "folder:f#viewer@user:1"]);
    const leaf = `folder:${"f".repeat(13)}`;
    expect(await f.can(leaf, "view", "user:1", { depth: 50 })).toBe(true);
    expect(await f.can(leaf, "view", "user:2", { depth: 50 })).toBe(false);
    await expect(f.can(leaf, "view", "user:2", { depth: 10 })).rejects.toMatchObject({
      code: "ERROR_CODE_DEPTH_NOT_ENOUGH",
      grpcCode: 3,
    });
  });
});

describe("a check reuses the evaluation of the pool's last synchronous check", () => {
  it("answers every check of a mixed sequence as a fresh evaluation does (contexts, errors, stores, fan-out)", async () => {
    const members = Array.from({ length: 1500 }, (_, i) => `group:big#member@user:m${i}`);
    const f = await fixture(DRIVE, [
      ...members,
      "folder:big#viewer@group:big#member",
      "group:eng#member@user:1",
      "folder:root#viewer@group:eng#member",
      "folder:sub#parent@folder:root",
      "doc:1#folder@folder:sub",
      "doc:1#owner@user:9",
      "doc:2#owner@user:2",
    ]);
    const other = await fixture(DRIVE, ["doc:1#owner@user:1"], [], f.evaluations); // the same pool
    const { Evaluation } = await import("./evaluation/evaluation.ts");
    const { TRUE, FAILED, PENDING } = await import("../compile/index.ts");
    type Step = [fixture: typeof f, entity: string, subject: string, opts?: Parameters<typeof f.can>[3]];
    const context = { tuples: [parseTupleString("doc:3#owner@user:7")] };
    const steps: Step[] = [
      [f, "doc:1", "user:1"],
      [f, "folder:big", "user:m1499"], // > 1024 entries: not kept
      [f, "doc:1", "user:9"],
      [f, "doc:3", "user:7", { context }],
      [f, "doc:3", "user:7"], // the context of the check before is gone
      [f, "doc:1", "user:1", { depth: 2 }], // DEPTH_NOT_ENOUGH: not kept
      [other, "doc:1", "user:1"], // another store
      [f, "doc:1", "user:1"],
      [f, "doc:2", "user:9"],
      [f, "folder:big", "user:m7"],
      [f, "doc:2", "user:2"],
    ];
    const fresh = (s: Step): boolean | string => {
      const [fx, entity, subject, opts] = s;
      const [type, id] = entity.split(":") as [string, string];
      const [stype, sid] = subject.split(":") as [string, string];
      const target = fx.target(opts);
      const e = new Evaluation(fx.compiled, target, { type: stype, id: sid, relation: "" });
      let r = e.invoke(type, id, "view", target.depth);
      for (let pass = 0; r === PENDING && pass < 100; pass++) {
        e.load();
        r = e.invoke(type, id, "view", target.depth);
      }
      return r === FAILED ? String((e.error as { code?: string }).code) : r === TRUE;
    };
    const answers: (boolean | string)[] = [];
    const expected: (boolean | string)[] = [];
    for (const s of steps) {
      expected.push(fresh(s));
      answers.push(await s[0].can(s[1], "view", s[2], s[3]).catch((e: { code?: string }) => String(e.code)));
    }
    expect(answers).toEqual(expected);
    expect(answers).toEqual([
      true,
      true,
      true,
      true,
      false,
      "ERROR_CODE_DEPTH_NOT_ENOUGH",
      true,
      true,
      false,
      true,
      true,
    ]);
  });
});
