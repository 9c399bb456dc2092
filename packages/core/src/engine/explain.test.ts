import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type ExplainOptions, explainToWire, type WireProofNode as ProofNode } from "../http/convert.ts";
import { verifyProof } from "../http/testing/explain-verify.ts";
import type { Context } from "../model.ts";
import { parseAttributeString, parseSubjectString, parseTupleString } from "../schema/index.ts";
import { openStore } from "../store/open.ts";
import type { Store } from "../store/store.ts";
import { check } from "./check.ts";
import { type ExplainTarget, explain as explainProof } from "./explain.ts";
import { type Fixture, fixture, TENANT } from "./testing.ts";
import type { CheckQuery } from "./types.ts";

/** explain's answer as the HTTP endpoint gives it: in Permify's JSON, bounded. */
const explain = async (t: ExplainTarget, query: CheckQuery, options?: ExplainOptions) =>
  explainToWire(await explainProof(t, query), options);

const SCHEMA = `
entity user {}
entity group {
  relation member @user @group#member
}
entity folder {
  relation owner @user
  relation parent @folder
  relation viewer @user @group#member
  permission view = viewer or owner or parent.view
}
entity doc {
  relation parent @folder
  relation owner @user
  relation editor @user @group#member
  relation banned @user
  attribute public boolean
  attribute level integer
  permission edit = owner or editor
  permission view = (edit or parent.view or public) not banned
  permission audit = owner and high(level)
  permission both = owner and editor
}
rule high(level integer) {
  level >= context.data.min
}`;

const TUPLES = [
  "doc:1#owner@user:anne",
  "doc:1#parent@folder:1",
  "doc:1#editor@group:eng#member",
  "group:eng#member@group:core#member",
  "group:core#member@user:carl",
  "folder:1#parent@folder:root",
  "folder:root#viewer@user:vera",
  "doc:2#banned@user:vera",
  "doc:2#parent@folder:root",
  "doc:3#parent@folder:1",
  "doc:3#parent@folder:2",
];
const ATTRIBUTES = ["doc:1$level|integer:7", "doc:4$public|boolean:true"];

const q = (entity: string, permission: string, subject: string): CheckQuery => {
  const [type, id] = entity.split(":");
  return { entity: { type, id }, permission, subject: parseSubjectString(subject) };
};

const target = (f: Fixture, opts: { depth?: number; context?: Partial<Context>; store?: Store } = {}) => ({
  ...f.target(opts),
  schema: f.compiled,
});

/** Compact rendering of a proof: kind entity#name result [tuple] (children). */
function shape(n: ProofNode): string {
  const hop = n.tuple
    ? ` via ${n.tuple.entity.type}:${n.tuple.entity.id}#${n.tuple.relation}@${n.tuple.subject.type}:${n.tuple.subject.id}${n.tuple.subject.relation ? `#${n.tuple.subject.relation}` : ""}${n.contextual ? " (ctx)" : ""}`
    : "";
  const kids = n.children.length > 0 ? ` (${n.children.map(shape).join(", ")})` : "";
  return `${n.kind} ${n.entity.type}:${n.entity.id}#${n.name} ${n.result}${hop}${kids}`;
}

describe("explain", () => {
  it("ALLOWED by a direct tuple: the full answer, field by field", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const out = await explain(target(f), q("doc:1", "edit", "user:anne"));
    expect(out).toEqual({
      can: "CHECK_RESULT_ALLOWED",
      metadata: { check_count: 2 },
      truncated: false,
      proof: {
        kind: "permission",
        entity: { type: "doc", id: "1" },
        name: "edit",
        result: "ALLOWED",
        children: [
          {
            kind: "union",
            entity: { type: "doc", id: "1" },
            name: "edit",
            result: "ALLOWED",
            children: [
              {
                kind: "relation",
                entity: { type: "doc", id: "1" },
                name: "owner",
                result: "ALLOWED",
                children: [
                  {
                    kind: "direct",
                    entity: { type: "doc", id: "1" },
                    name: "owner",
                    result: "ALLOWED",
                    tuple: {
                      entity: { type: "doc", id: "1" },
                      relation: "owner",
                      subject: { type: "user", id: "anne", relation: "" },
                    },
                    contextual: false,
                    reason: "the tuple names the subject user:anne",
                    children: [],
                  },
                ],
              },
            ],
          },
        ],
      },
    });
  });

  it("ALLOWED through nested groups and a parent hop: only the granting path, hop by hop", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const carl = await explain(target(f), q("doc:1", "edit", "user:carl"));
    expect(carl.can).toBe("CHECK_RESULT_ALLOWED");
    expect(shape(carl.proof)).toBe(
      "permission doc:1#edit ALLOWED (union doc:1#edit ALLOWED (relation doc:1#editor ALLOWED (" +
        "relation group:eng#member ALLOWED via doc:1#editor@group:eng#member (" +
        "relation group:core#member ALLOWED via group:eng#member@group:core#member (" +
        "direct group:core#member ALLOWED via group:core#member@user:carl)))))",
    );
    const vera = await explain(target(f), q("doc:1", "view", "user:vera"));
    expect(shape(vera.proof)).toBe(
      "permission doc:1#view ALLOWED (exclusion doc:1#view ALLOWED (" +
        "union doc:1#view ALLOWED (union doc:1#view ALLOWED (" +
        "tuple_to_userset doc:1#parent.view ALLOWED (" +
        "permission folder:1#view ALLOWED via doc:1#parent@folder:1 (union folder:1#view ALLOWED (" +
        "tuple_to_userset folder:1#parent.view ALLOWED (" +
        "permission folder:root#view ALLOWED via folder:1#parent@folder:root (union folder:root#view ALLOWED (" +
        "union folder:root#view ALLOWED (relation folder:root#viewer ALLOWED (" +
        "direct folder:root#viewer ALLOWED via folder:root#viewer@user:vera)))))))))), " +
        "relation doc:1#banned DENIED))",
    );
    expect(vera.proof.children[0].children[1].reason).toBe("no tuple doc:1#banned@user:vera");
  });

  it("DENIED: every branch tried, each with why it failed", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const out = await explain(target(f), q("doc:3", "view", "user:zed"));
    expect(out.can).toBe("CHECK_RESULT_DENIED");
    expect(out.truncated).toBe(false);
    expect(shape(out.proof)).toBe(
      "permission doc:3#view DENIED (exclusion doc:3#view DENIED (union doc:3#view DENIED (" +
        "union doc:3#view DENIED (permission doc:3#edit DENIED (union doc:3#edit DENIED (" +
        "relation doc:3#owner DENIED, relation doc:3#editor DENIED)), " +
        "tuple_to_userset doc:3#parent.view DENIED (" +
        "permission folder:1#view DENIED via doc:3#parent@folder:1 (union folder:1#view DENIED (" +
        "union folder:1#view DENIED (relation folder:1#viewer DENIED, relation folder:1#owner DENIED), " +
        "tuple_to_userset folder:1#parent.view DENIED (" +
        "permission folder:root#view DENIED via folder:1#parent@folder:root (union folder:root#view DENIED (" +
        "union folder:root#view DENIED (relation folder:root#viewer DENIED, relation folder:root#owner DENIED), " +
        "tuple_to_userset folder:root#parent.view DENIED))))), " +
        "permission folder:2#view DENIED via doc:3#parent@folder:2 (union folder:2#view DENIED (" +
        "union folder:2#view DENIED (relation folder:2#viewer DENIED, relation folder:2#owner DENIED), " +
        "tuple_to_userset folder:2#parent.view DENIED)))), " +
        "attribute doc:3#public DENIED)))",
    );
    const reasons: string[] = [];
    const walk = (n: ProofNode) => {
      if (n.reason) reasons.push(n.reason);
      n.children.forEach(walk);
    };
    walk(out.proof);
    expect(reasons).toContain("no tuple doc:3#owner@user:zed");
    expect(reasons).toContain("no tuple folder:root#parent");
    expect(reasons).toContain("no attribute doc:3$public (false)");
    // banned DENIED an otherwise granted view: the exclusion shows the grant and the exclusion's grant
    const banned = await explain(target(f), q("doc:2", "view", "user:vera"));
    expect(banned.can).toBe("CHECK_RESULT_DENIED");
    const exclusion = banned.proof.children[0];
    expect(exclusion.children.map((c) => `${c.kind} ${c.name} ${c.result}`)).toEqual([
      "union view ALLOWED",
      "relation banned ALLOWED",
    ]);
    expect(exclusion.children[1].children[0].tuple).toEqual({
      entity: { type: "doc", id: "2" },
      relation: "banned",
      subject: { type: "user", id: "vera", relation: "" },
    });
  });

  it("attributes and rules: the value read, the rule's expression and its arguments", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const pub = await explain(target(f), q("doc:4", "view", "user:zed"));
    expect(pub.can).toBe("CHECK_RESULT_ALLOWED");
    // (edit or parent.view or public) is (edit or parent.view) or public: the outer union's second branch grants
    const attribute = pub.proof.children[0].children[0].children[0];
    expect(attribute).toEqual({
      kind: "attribute",
      entity: { type: "doc", id: "4" },
      name: "public",
      result: "ALLOWED",
      attribute: {
        entity: { type: "doc", id: "4" },
        attribute: "public",
        value: { "@type": "type.googleapis.com/base.v1.BooleanValue", data: true },
      },
      contextual: false,
      children: [],
    });
    // the engine's proof holds model values; the wire form gives them as Any
    const model = await explainProof(target(f), q("doc:4", "view", "user:zed"));
    expect(model.proof.children[0].children[0].children[0].attribute?.value).toEqual({
      type: "ATTRIBUTE_TYPE_BOOLEAN",
      data: true,
    });
    const audit = (min: number) =>
      explain(target(f, { context: { data: { min } } }), q("doc:1", "audit", "user:anne"));
    const granted = await audit(5);
    expect(granted.can).toBe("CHECK_RESULT_ALLOWED");
    expect(granted.proof.children[0].children[1]).toEqual({
      kind: "rule",
      entity: { type: "doc", id: "1" },
      name: "high",
      result: "ALLOWED",
      rule: {
        name: "high",
        expression: "level >= context.data.min",
        arguments: { level: { "@type": "type.googleapis.com/base.v1.IntegerValue", data: 7 } },
      },
      contextual: false,
      children: [],
    });
    const refused = await audit(10);
    expect(refused.can).toBe("CHECK_RESULT_DENIED");
    // an intersection DENIED shows the branch that failed
    expect(refused.proof.children[0].children.map((c) => `${c.kind} ${c.name} ${c.result}`)).toEqual([
      "rule high DENIED",
    ]);
    // a missing integer argument is its zero value
    const zero = await explain(
      target(f, { context: { data: { min: 0 }, tuples: [parseTupleString("doc:9#owner@user:anne")] } }),
      q("doc:9", "audit", "user:anne"),
    );
    expect(zero.can).toBe("CHECK_RESULT_ALLOWED");
    expect(zero.proof.children[0].children[1].rule?.arguments).toEqual({
      level: { "@type": "type.googleapis.com/base.v1.IntegerValue", data: 0 },
    });
  });

  it("contextual tuples and attributes are marked contextual", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const context = {
      tuples: [parseTupleString("doc:5#owner@user:ctx")],
      attributes: [parseAttributeString("doc:6$public|boolean:true")],
    };
    const owner = await explain(target(f, { context }), q("doc:5", "edit", "user:ctx"));
    const direct = owner.proof.children[0].children[0].children[0];
    expect(direct.kind).toBe("direct");
    expect(direct.contextual).toBe(true);
    const pub = await explain(target(f, { context }), q("doc:6", "view", "user:ctx"));
    const attribute = pub.proof.children[0].children[0].children[0];
    expect(attribute.kind).toBe("attribute");
    expect(attribute.contextual).toBe(true);
    for (const [out, query] of [
      [owner, q("doc:5", "edit", "user:ctx")],
      [pub, q("doc:6", "view", "user:ctx")],
    ] as const)
      expect(await verifyProof(target(f, { context }), query, out)).toEqual([]);
  });

  it("a cycle in the data is a cycle node (DENIED), and the proof still ends", async () => {
    const f = await fixture(SCHEMA, [
      "group:1#member@group:2#member",
      "group:2#member@group:1#member",
      "group:2#member@user:bob",
    ]);
    const denied = await explain(target(f), q("group:1", "member", "user:zed"));
    expect(shape(denied.proof)).toBe(
      "relation group:1#member DENIED (relation group:2#member DENIED via group:1#member@group:2#member (" +
        "cycle group:1#member DENIED via group:2#member@group:1#member))",
    );
    expect(denied.proof.children[0].children[0].reason).toBe("cycle: group:1#member is already on the path");
    const allowed = await explain(target(f), q("group:1", "member", "user:bob"));
    expect(allowed.can).toBe("CHECK_RESULT_ALLOWED");
    expect(await verifyProof(target(f), q("group:1", "member", "user:zed"), denied)).toEqual([]);
    expect(await verifyProof(target(f), q("group:1", "member", "user:bob"), allowed)).toEqual([]);
  });

  it("the proof is bounded: past maxNodes nodes are cut and the answer says truncated", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const query = q("doc:3", "view", "user:zed");
    const out = await explain(target(f), query, { maxNodes: 6 });
    expect(out.can).toBe("CHECK_RESULT_DENIED");
    expect(out.truncated).toBe(true);
    let nodes = 0;
    const cuts: ProofNode[] = [];
    const walk = (n: ProofNode) => {
      if (n.kind === "cut") cuts.push(n);
      else nodes++;
      n.children.forEach(walk);
    };
    walk(out.proof);
    expect(nodes).toBe(6);
    expect(cuts.length).toBeGreaterThan(0);
    expect(cuts[0].reason).toMatch(
      /^proof cut \(at most 6 nodes, 524288 bytes\): this node( and \d+ more)? not shown$/,
    );
    expect(await verifyProof(target(f), query, out)).toEqual([]);
    const full = await explain(target(f), query);
    expect(full.truncated).toBe(false);
  });

  it("5,000 usersets: one cut node per shown node at most, the answer within its bytes", async () => {
    const schema = `entity user {}
entity group {
  relation member @user @group#member
}`;
    const tuples = Array.from({ length: 5_000 }, (_, i) => `group:root#member@group:g${i}#member`);
    const f = await fixture(schema, tuples);
    const query = q("group:root", "member", "user:zed");
    for (const maxBytes of [undefined, 20_000]) {
      const out = await explain(target(f), query, maxBytes === undefined ? {} : { maxBytes });
      expect(out.can).toBe("CHECK_RESULT_DENIED");
      expect(out.truncated).toBe(true);
      let shown = 0;
      let cuts = 0;
      const walk = (n: ProofNode) => {
        if (n.kind === "cut") cuts++;
        else shown++;
        n.children.forEach(walk);
      };
      walk(out.proof);
      expect(cuts).toBeLessThanOrEqual(shown);
      expect(shown).toBeLessThanOrEqual(1000);
      const bytes = JSON.stringify(out).length;
      expect(bytes).toBeLessThanOrEqual((maxBytes ?? 512 * 1024) + 1024);
      const cut = out.proof.children.find((c) => c.kind === "cut");
      expect(cut?.reason).toMatch(/this node and \d+ more not shown$/);
      expect(await verifyProof(target(f), query, out)).toEqual([]);
    }
  });

  it("errors are check's errors", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const code = async (run: () => unknown) => {
      try {
        await run();
        return "none";
      } catch (e) {
        return (e as { code?: string }).code;
      }
    };
    expect(await code(() => explain(target(f), q("nope:1", "view", "user:a")))).toBe(
      "ERROR_CODE_SCHEMA_NOT_FOUND",
    );
    expect(await code(() => explain(target(f), q("doc:1", "nope", "user:a")))).toBe(
      "ERROR_CODE_SCHEMA_NOT_FOUND",
    );
    const carl = q("doc:1", "view", "user:carl");
    expect(await code(() => explain(target(f, { depth: 3 }), carl))).toBe("ERROR_CODE_DEPTH_NOT_ENOUGH");
    expect(await code(() => check(f.compiled, f.target({ depth: 3 }), carl))).toBe(
      "ERROR_CODE_DEPTH_NOT_ENOUGH",
    );
    expect(await code(() => explain(target(f, { depth: 5 }), carl))).toBe("none");
  });
});

describe("every proof re-verifies against the store, and explain decides as check does", () => {
  const dir = mkdtempSync(join(tmpdir(), "pemba-explain-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const subjects = [
    "user:anne",
    "user:carl",
    "user:vera",
    "user:zed",
    "group:eng#member",
    "group:core#member",
  ];
  const questions: CheckQuery[] = [];
  for (const entity of ["doc:1", "doc:2", "doc:3", "doc:4", "folder:1", "folder:root", "group:eng"])
    for (const permission of entity.startsWith("doc")
      ? ["edit", "view", "audit", "both", "owner", "editor", "public"]
      : entity.startsWith("folder")
        ? ["view", "viewer"]
        : ["member"])
      for (const subject of subjects) questions.push(q(entity, permission, subject));

  async function replayAll(f: Fixture, store?: Store): Promise<number> {
    let allowed = 0;
    const snap = store ? await store.headSnap(TENANT) : undefined;
    for (const query of questions) {
      const base = f.target({ store, context: { data: { min: 5 } } });
      const t = { ...base, snap: snap ?? base.snap, schema: f.compiled };
      const out = await explain(t, query);
      const decided = await check(f.compiled, t, query);
      expect(out.can, JSON.stringify(query)).toBe(decided.can);
      expect(await verifyProof(t, query, out), JSON.stringify(query)).toEqual([]);
      if (out.can === "CHECK_RESULT_ALLOWED") allowed++;
    }
    return allowed;
  }

  it(`on the memory store (${questions.length} questions)`, async () => {
    const f = await fixture(SCHEMA, [...TUPLES, "group:core#member@group:eng#member"], ATTRIBUTES);
    expect(await replayAll(f)).toBe(33);
  });

  it("on a libSQL file (reads answer with promises: passes load in batches)", async () => {
    const f = await fixture(SCHEMA, [...TUPLES, "group:core#member@group:eng#member"], ATTRIBUTES);
    const store = await openStore(`file:${join(dir, "explain.db")}`);
    await store.write(TENANT, {
      tuples: [...TUPLES, "group:core#member@group:eng#member"].map(parseTupleString),
      attributes: ATTRIBUTES.map(parseAttributeString),
    });
    expect(await replayAll(f, store)).toBe(33);
    await store.close();
  });

  it("the verifier catches a forged hop, a flipped result and a dropped branch", async () => {
    const f = await fixture(SCHEMA, TUPLES, ATTRIBUTES);
    const query = q("doc:1", "edit", "user:carl");
    const out = await explain(target(f), query);
    const forged = structuredClone(out);
    const hop = forged.proof.children[0].children[0].children[0];
    hop.tuple = { ...(hop.tuple as NonNullable<ProofNode["tuple"]>), relation: "owner" };
    expect((await verifyProof(target(f), query, forged)).join("\n")).toMatch(/is not stored/);
    const flipped = structuredClone(out);
    flipped.proof.children[0].result = "DENIED";
    expect(await verifyProof(target(f), query, flipped)).not.toEqual([]);
    const denied = await explain(target(f), q("doc:3", "view", "user:zed"));
    const dropped = structuredClone(denied);
    dropped.proof.children[0].children[0].children[0].children[1].children.pop();
    expect((await verifyProof(target(f), q("doc:3", "view", "user:zed"), dropped)).join("\n")).toMatch(
      /lists 1 of 2 tuples/,
    );
  });
});
