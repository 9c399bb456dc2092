import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseAttributeString, parseTupleString } from "../schema/index.ts";
import { check } from "./check.ts";
import { lookupEntity } from "./lookup-entity.ts";
import { lookupSubject } from "./lookup-subject.ts";
import { type Fixture, fixture } from "./testing.ts";

const SCHEMA = `
entity user {}
entity group {
  relation member @user @group#member
}
entity folder {
  relation parent @folder
  relation viewer @user @group#member
  relation banned @user
  attribute public boolean
  permission view = (viewer or parent.view or public) not banned
}
entity doc {
  relation folder @folder
  relation owner @user
  attribute level integer
  permission view = owner or folder.view
  permission edit = owner and high(level)
  permission read = view and folder.view
}
rule high(level integer) {
  level > 2
}`;

const user = (id: string) => ({ type: "user", id, relation: "" });
const ids = ["1", "2", "3", "4"];

async function allEntities(
  f: Fixture,
  entityType: string,
  permission: string,
  subject = user("1"),
  pageSize = 2,
) {
  const out: string[] = [];
  let continuousToken: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await lookupEntity(f.compiled, f.target({ depth: 30 }), {
      entityType,
      permission,
      subject,
      pageSize,
      continuousToken,
    });
    out.push(...page.entityIds);
    if (!page.continuousToken) return out;
    continuousToken = page.continuousToken;
  }
  throw new Error("paging did not end");
}

async function allSubjects(
  f: Fixture,
  entity: { type: string; id: string },
  permission: string,
  pageSize = 2,
) {
  const out: string[] = [];
  let continuousToken: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await lookupSubject(f.compiled, f.target({ depth: 30 }), {
      entity,
      permission,
      subjectReference: { type: "user", relation: "" },
      pageSize,
      continuousToken,
    });
    out.push(...page.subjectIds);
    if (!page.continuousToken) return out;
    continuousToken = page.continuousToken;
  }
  throw new Error("paging did not end");
}

const allowed = async (f: Fixture, type: string, id: string, permission: string, subjectId: string) =>
  (
    await check(f.compiled, f.target({ depth: 30 }), {
      entity: { type, id },
      permission,
      subject: user(subjectId),
    })
  ).can === "CHECK_RESULT_ALLOWED";

const tupleArb = fc.oneof(
  fc.tuple(fc.constantFrom(...ids), fc.constantFrom(...ids)).map(([g, u]) => `group:${g}#member@user:${u}`),
  fc
    .tuple(fc.constantFrom(...ids), fc.constantFrom(...ids))
    .map(([g, h]) => `group:${g}#member@group:${h}#member`),
  fc
    .tuple(fc.constantFrom(...ids), fc.constantFrom(...ids))
    .map(([a, b]) => `folder:${a}#parent@folder:${b}`),
  fc.tuple(fc.constantFrom(...ids), fc.constantFrom(...ids)).map(([a, u]) => `folder:${a}#viewer@user:${u}`),
  fc
    .tuple(fc.constantFrom(...ids), fc.constantFrom(...ids))
    .map(([a, g]) => `folder:${a}#viewer@group:${g}#member`),
  fc.tuple(fc.constantFrom(...ids), fc.constantFrom(...ids)).map(([a, u]) => `folder:${a}#banned@user:${u}`),
  fc.tuple(fc.constantFrom(...ids), fc.constantFrom(...ids)).map(([d, a]) => `doc:${d}#folder@folder:${a}`),
  fc.tuple(fc.constantFrom(...ids), fc.constantFrom(...ids)).map(([d, u]) => `doc:${d}#owner@user:${u}`),
);
const attributeArb = fc.oneof(
  fc.tuple(fc.constantFrom(...ids), fc.boolean()).map(([a, b]) => `folder:${a}$public|boolean:${b}`),
  fc
    .tuple(fc.constantFrom(...ids), fc.integer({ min: 0, max: 5 }))
    .map(([d, n]) => `doc:${d}$level|integer:${n}`),
);

describe("lookups agree with check", () => {
  it("property: for every known id, id ∈ lookupEntity ⇔ check ALLOWED and id ∈ lookupSubject ⇔ check ALLOWED", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(tupleArb, { maxLength: 14 }),
        fc.uniqueArray(attributeArb, { maxLength: 4, selector: (a) => a.split("|")[0] }),
        async (tuples, attributes) => {
          const f = await fixture(SCHEMA, tuples, attributes);
          const snap = f.store.headSnap("t1");
          // Ids the store knows are the universe of attribute/rule leaves; an id mentioned nowhere is not listed.
          const known = (type: string, id: string) => f.store.listObjectIds("t1", snap, type).includes(id);
          for (const [type, permission] of [
            ["doc", "view"],
            ["doc", "edit"],
            ["doc", "read"],
            ["folder", "view"],
            ["group", "member"],
          ]) {
            for (const subjectId of ["1", "2"]) {
              const found = await allEntities(f, type, permission, user(subjectId));
              expect(new Set(found).size).toBe(found.length);
              for (const id of ids)
                expect(found.includes(id), `${type}:${id} ${permission} user:${subjectId}`).toBe(
                  known(type, id) && (await allowed(f, type, id, permission, subjectId)),
                );
            }
            for (const id of ids) {
              const subjects = await allSubjects(f, { type, id }, permission);
              expect(subjects).toEqual([...subjects].sort());
              for (const u of ids)
                expect(subjects.includes(u), `${type}:${id} ${permission} subject user:${u}`).toBe(
                  known("user", u) && (await allowed(f, type, id, permission, u)),
                );
            }
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it("lookup-subject on a public entity returns every known user except the banned (no ALL bug)", async () => {
    const f = await fixture(
      SCHEMA,
      ["folder:1#viewer@user:1", "folder:1#banned@user:2", "group:1#member@user:3", "doc:9#owner@user:7"],
      ["folder:1$public|boolean:true"],
    );
    expect(await allSubjects(f, { type: "folder", id: "1" }, "view", 100)).toEqual(["1", "3", "7"]);
  });

  it("paging returns every id exactly once, with opaque tokens", async () => {
    const tuples = Array.from({ length: 7 }, (_, i) => `doc:${i}#owner@user:1`);
    const f = await fixture(SCHEMA, tuples);
    const page = await lookupEntity(f.compiled, f.target(), {
      entityType: "doc",
      permission: "view",
      subject: user("1"),
      pageSize: 3,
    });
    expect(page.entityIds).toEqual(["0", "1", "2"]);
    expect(page.continuousToken).not.toBe("");
    expect(await allEntities(f, "doc", "view", user("1"), 3)).toEqual(["0", "1", "2", "3", "4", "5", "6"]);
    expect(await allEntities(f, "doc", "view", user("1"), 7)).toEqual(["0", "1", "2", "3", "4", "5", "6"]);
    await expect(
      lookupEntity(f.compiled, f.target(), {
        entityType: "doc",
        permission: "view",
        subject: user("1"),
        pageSize: 3,
        continuousToken: "%%%",
      }),
    ).rejects.toMatchObject({ code: "ERROR_CODE_INVALID_CONTINUOUS_TOKEN" });
  });

  it("scope restricts the candidate ids", async () => {
    const f = await fixture(SCHEMA, ["doc:1#owner@user:1", "doc:2#owner@user:1", "doc:3#owner@user:1"]);
    const page = await lookupEntity(f.compiled, f.target(), {
      entityType: "doc",
      permission: "view",
      subject: user("1"),
      scope: { doc: ["1", "3", "9"] },
      pageSize: 10,
    });
    expect(page).toEqual({ entityIds: ["1", "3"], continuousToken: "" });
  });

  it("contextual tuples and attributes take part in lookups", async () => {
    const f = await fixture(SCHEMA, []);
    const target = f.target({
      context: {
        tuples: [parseTupleString("doc:5#owner@user:1")],
        attributes: [parseAttributeString("folder:8$public|boolean:true")],
      },
    });
    const docs = await lookupEntity(f.compiled, target, {
      entityType: "doc",
      permission: "view",
      subject: user("1"),
      pageSize: 10,
    });
    expect(docs.entityIds).toEqual(["5"]);
    const folders = await lookupEntity(f.compiled, target, {
      entityType: "folder",
      permission: "view",
      subject: user("1"),
      pageSize: 10,
    });
    expect(folders.entityIds).toEqual(["8"]);
  });
});
