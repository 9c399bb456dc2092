import { describe, expect, it } from "vitest";
import type { Store } from "../store/store.ts";
import { bulkCheck, check, subjectPermission } from "./check.ts";
import { expand, MAX_EXPAND_NODES } from "./expand.ts";
import { countingStore, fixture } from "./testing.ts";
import type { ExpandNode } from "./types.ts";

const SCHEMA = `
entity user {
  relation self @user
  relation follower @user
  relation blocked @user
  attribute is_public boolean
  permission view = self or (is_public or follower) not blocked
}
entity content {
  relation owner @user
  attribute is_public boolean
  permission view = owner.self or (is_public or owner.follower) not owner.blocked
}
entity group {
  relation member @user @group#member
}
entity account {
  attribute balance integer
  permission spend = enough(balance)
}
rule enough(balance integer) {
  balance > 10
}`;

const TUPLES = [
  "user:1#self@user:1",
  "user:1#follower@user:2",
  "user:1#blocked@user:3",
  "content:1#owner@user:1",
  "group:1#member@user:1",
  "group:2#member@group:1#member",
];
const ATTRIBUTES = ["content:1$is_public|boolean:false", "account:1$balance|integer:42"];
const user = (id: string) => ({ type: "user", id, relation: "" });

describe("expand", () => {
  it("builds Permify's tree: rewrite nodes, tuple-to-userset UNIONs, subject and value leaves", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const tree = await expand(f.compiled, f.target(), {
      entity: { type: "content", id: "1" },
      permission: "view",
    });
    const c1 = { type: "content", id: "1" };
    const u1 = { type: "user", id: "1" };
    const ttu = (rel: string, subjects: string[]) => ({
      entity: c1,
      permission: "owner",
      arguments: [],
      expand: {
        operation: "OPERATION_UNION",
        children: [
          {
            entity: u1,
            permission: rel,
            arguments: [],
            leaf: { subjects: { subjects: subjects.map(user) } },
          },
        ],
      },
    });
    // Equal precedence, left to right: (owner.self or (is_public or owner.follower)) not owner.blocked.
    expect(tree).toEqual({
      entity: c1,
      permission: "view",
      arguments: [],
      expand: {
        operation: "OPERATION_EXCLUSION",
        children: [
          {
            entity: c1,
            permission: "view",
            arguments: [],
            expand: {
              operation: "OPERATION_UNION",
              children: [
                ttu("self", ["1"]),
                {
                  entity: c1,
                  permission: "view",
                  arguments: [],
                  expand: {
                    operation: "OPERATION_UNION",
                    children: [
                      {
                        entity: c1,
                        permission: "is_public",
                        arguments: [],
                        leaf: { value: { type: "ATTRIBUTE_TYPE_BOOLEAN", data: false } },
                      },
                      ttu("follower", ["2"]),
                    ],
                  },
                },
              ],
            },
          },
          ttu("blocked", ["3"]),
        ],
      },
    });
  });

  it("userset subjects are expanded beside the direct subjects; rule calls carry argument values", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const group = await expand(f.compiled, f.target(), {
      entity: { type: "group", id: "2" },
      permission: "member",
    });
    expect(group).toEqual({
      entity: { type: "group", id: "2" },
      permission: "member",
      arguments: [],
      expand: {
        operation: "OPERATION_UNION",
        children: [
          {
            entity: { type: "group", id: "2" },
            permission: "member",
            arguments: [],
            leaf: { subjects: { subjects: [{ type: "group", id: "1", relation: "member" }] } },
          },
          {
            entity: { type: "group", id: "1" },
            permission: "member",
            arguments: [],
            leaf: { subjects: { subjects: [user("1")] } },
          },
        ],
      },
    });
    const spend = await expand(f.compiled, f.target(), {
      entity: { type: "account", id: "1" },
      permission: "spend",
    });
    expect(spend).toEqual({
      entity: { type: "account", id: "1" },
      permission: "enough",
      arguments: [{ computed_attribute: { name: "balance" } }],
      leaf: { values: { values: { balance: { type: "ATTRIBUTE_TYPE_INTEGER", data: 42 } } } },
    });
  });
});

describe("expand size", () => {
  /** `p1 = a or b`, `pN = pN-1 and pN-1` (names without digits: p_b, p_c, ...): pN's tree has 2^(N+1) - 1 nodes. */
  const p = (n: number) => `p_${n > 26 ? "z" : ""}${String.fromCharCode(96 + (n > 26 ? n - 26 : n))}`;
  const doubling = (levels: number) => {
    const lines = ["entity user {}", "entity doc {", "  relation a @user", "  relation b @user"];
    lines.push(`  permission ${p(1)} = a or b`);
    for (let i = 2; i <= levels; i++) lines.push(`  permission ${p(i)} = ${p(i - 1)} and ${p(i - 1)}`);
    lines.push("}");
    return lines.join("\n");
  };
  const countNodes = (node: ExpandNode): number =>
    "expand" in node ? 1 + node.expand.children.reduce((n, c) => n + countNodes(c), 0) : 1;

  it("a tree under the node limit is built in full", async () => {
    const f = await fixture(doubling(12), ["doc:1#a@user:1"]);
    const tree = await expand(f.compiled, f.target(), {
      entity: { type: "doc", id: "1" },
      permission: p(12),
    });
    // p1: rewrite + 2 leaves; pN: rewrite + 2 * pN-1 → 2^(N+1) - 1 nodes
    expect(countNodes(tree)).toBe(2 ** 13 - 1);
  });

  it("an exponential tree is refused with RESOURCE_EXHAUSTED once it passes MAX_EXPAND_NODES", async () => {
    const f = await fixture(doubling(40), ["doc:1#a@user:1"]);
    const query = { entity: { type: "doc", id: "1" }, permission: p(40) };
    await expect(expand(f.compiled, f.target(), query)).rejects.toMatchObject({
      code: "ERROR_CODE_EXECUTION",
      grpcCode: 8,
      httpStatus: 429,
      message: `expand tree exceeds ${MAX_EXPAND_NODES} nodes`,
    });
    // just under the limit: 2^16 - 1 nodes are built
    const ok = await expand(f.compiled, f.target(), { entity: query.entity, permission: p(15) });
    expect(countNodes(ok)).toBe(2 ** 16 - 1);
  });
});

describe("subject permission", () => {
  it("lists every permission and relation, or only permissions", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const query = { entity: { type: "user", id: "1" }, subject: user("2") };
    expect(await subjectPermission(f.compiled, f.target(), { ...query, onlyPermission: false })).toEqual({
      blocked: "CHECK_RESULT_DENIED",
      follower: "CHECK_RESULT_ALLOWED",
      self: "CHECK_RESULT_DENIED",
      view: "CHECK_RESULT_ALLOWED",
    });
    expect(await subjectPermission(f.compiled, f.target(), { ...query, onlyPermission: true })).toEqual({
      view: "CHECK_RESULT_ALLOWED",
    });
  });
});

describe("bulk check", () => {
  it("answers in request order; an item's engine error makes that item DENIED", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const out = await bulkCheck(f.compiled, f.target(), [
      { entity: { type: "content", id: "1" }, permission: "view", subject: user("1") },
      { entity: { type: "content", id: "1" }, permission: "view", subject: user("3") },
      { entity: { type: "content", id: "1" }, permission: "nope", subject: user("1") },
      { entity: { type: "content", id: "1" }, permission: "view", subject: user("2") },
    ]);
    expect(out.map((o) => o.can)).toEqual([
      "CHECK_RESULT_ALLOWED",
      "CHECK_RESULT_DENIED",
      "CHECK_RESULT_DENIED",
      "CHECK_RESULT_ALLOWED",
    ]);
    expect(out[2].checkCount).toBe(1);
  });
});

/** The same store answering with promises, like libSQL or PostgreSQL. */
function asyncStore(inner: Store): Store {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      if (prop === "queryTuples" || prop === "queryAttributes" || prop === "querySubjectTuples")
        return async (...args: unknown[]) => value.apply(target, args);
      return value.bind(target);
    },
  });
}

describe("batching", () => {
  it("an asynchronous store gets one call per kind per level of the walk, for a single check", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const store = countingStore(asyncStore(f.store));
    const out = await check(f.compiled, f.target({ store }), {
      entity: { type: "content", id: "1" },
      permission: "view",
      subject: user("2"),
    });
    expect(out.can).toBe("CHECK_RESULT_ALLOWED");
    // level 1: content:1#owner + content:1$is_public; level 2: user:1#self/#follower/#blocked in one call.
    expect(store.calls).toMatchObject({ queryTuples: 2, queryAttributes: 1 });
  });

  it("bulk items share the batches and the sub-problems", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const store = countingStore(asyncStore(f.store));
    const items = ["1", "2", "3", "4", "5", "6"].map((id) => ({
      entity: { type: "content", id: "1" },
      permission: "view",
      subject: user(id),
    }));
    const out = await bulkCheck(f.compiled, f.target({ store }), items);
    expect(out.map((o) => o.can === "CHECK_RESULT_ALLOWED")).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
    ]);
    expect(store.calls).toMatchObject({ queryTuples: 2, queryAttributes: 1 });
  });

  it("a synchronous store is never awaited: check returns a plain value", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const query = { entity: { type: "content", id: "1" }, permission: "view", subject: user("2") };
    check(f.compiled, f.target(), query);
    const out = check(f.compiled, f.target(), query);
    expect(out).not.toBeInstanceOf(Promise);
    expect(out).toMatchObject({ can: "CHECK_RESULT_ALLOWED" });
  });
});
