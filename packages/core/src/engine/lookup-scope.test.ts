import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Subject } from "../model.ts";
import { check } from "./check.ts";
import { lookupEntity } from "./lookup-entity.ts";
import { lookupSubject } from "./lookup-subject.ts";
import { type Fixture, fixture } from "./testing.ts";

// Userset subjects (group#member, group#admin), a recursive relation on the subject's own type (group#owner @group),
// attribute leaves and an exclusion on an intermediate type (folder), and a result type reached through both.
const SCHEMA = `
entity user {}
entity group {
  relation admin @user
  relation member @user @group#member @group#admin
  relation owner @group
  permission comment = owner.admin
  permission manage = admin or owner.manage
}
entity folder {
  relation parent @folder
  relation viewer @user @group#member
  relation banned @user @group#member
  attribute public boolean
  permission view = (viewer or parent.view or public) not banned
}
entity doc {
  relation folder @folder
  relation team @group
  relation owner @user @group#admin
  permission view = owner or folder.view
  permission comment = team.admin or team.comment or folder.view
}`;

const ids = ["1", "2", "3"];
const id = fc.constantFrom(...ids);
const pair = fc.tuple(id, id);
const tupleArb = fc.oneof(
  pair.map(([g, u]) => `group:${g}#admin@user:${u}`),
  pair.map(([g, u]) => `group:${g}#member@user:${u}`),
  pair.map(([g, h]) => `group:${g}#member@group:${h}#member`),
  pair.map(([g, h]) => `group:${g}#member@group:${h}#admin`),
  pair.map(([g, h]) => `group:${g}#owner@group:${h}`),
  pair.map(([a, b]) => `folder:${a}#parent@folder:${b}`),
  pair.map(([a, u]) => `folder:${a}#viewer@user:${u}`),
  pair.map(([a, g]) => `folder:${a}#viewer@group:${g}#member`),
  pair.map(([a, g]) => `folder:${a}#banned@group:${g}#member`),
  pair.map(([d, a]) => `doc:${d}#folder@folder:${a}`),
  pair.map(([d, g]) => `doc:${d}#team@group:${g}`),
  pair.map(([d, u]) => `doc:${d}#owner@user:${u}`),
  pair.map(([d, g]) => `doc:${d}#owner@group:${g}#admin`),
);
const attributeArb = fc.tuple(id, fc.boolean()).map(([a, b]) => `folder:${a}$public|boolean:${b}`);
// A scope per type: absent, or some ids (an id no data names, "9", included).
const scopeIds = fc.option(fc.uniqueArray(fc.constantFrom("1", "2", "3", "9"), { minLength: 1 }), {
  nil: undefined,
});
const scopeArb = fc.record({ doc: scopeIds, folder: scopeIds, group: scopeIds }).map((scope) => {
  const out: Record<string, string[]> = {};
  for (const [type, list] of Object.entries(scope)) if (list) out[type] = list;
  return out;
});

const subject = (s: string): Subject => {
  const [type, rest] = s.split(":");
  const [subjectId, relation = ""] = rest.split("#");
  return { type, id: subjectId, relation };
};
const SUBJECTS = ["user:1", "user:2", "group:1#member", "group:2#admin", "group:3"];
const QUERIES: [string, string][] = [
  ["doc", "view"],
  ["doc", "comment"],
  ["folder", "view"],
  ["group", "comment"],
  ["group", "manage"],
  ["group", "member"],
];

async function allEntities(
  f: Fixture,
  entityType: string,
  permission: string,
  who: Subject,
  scope: Record<string, string[]>,
  pageSize: number,
) {
  const out: string[] = [];
  let continuousToken: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await lookupEntity(f.compiled, f.target({ depth: 30 }), {
      entityType,
      permission,
      subject: who,
      scope,
      pageSize,
      continuousToken,
    });
    expect(page.entityIds.length).toBeLessThanOrEqual(pageSize);
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
  subjectReference: { type: string; relation: string },
  pageSize: number,
) {
  const out: string[] = [];
  let continuousToken: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await lookupSubject(f.compiled, f.target({ depth: 30 }), {
      entity,
      permission,
      subjectReference,
      pageSize,
      continuousToken,
    });
    out.push(...page.subjectIds);
    if (!page.continuousToken) return out;
    continuousToken = page.continuousToken;
  }
  throw new Error("paging did not end");
}

const allowed = async (f: Fixture, type: string, entityId: string, permission: string, who: Subject) =>
  (
    await check(f.compiled, f.target({ depth: 30 }), {
      entity: { type, id: entityId },
      permission,
      subject: who,
    })
  ).can === "CHECK_RESULT_ALLOWED";

/** The data a scoped walk reads: rows whose entity is of a scoped type but outside its scope are left out. */
const readable = (rows: string[], scope: Record<string, string[]>) =>
  rows.filter((row) => {
    const [type, rest] = row.split(":");
    const entityId = rest.split(/[#$]/)[0];
    return scope[type] === undefined || scope[type].includes(entityId);
  });

describe("lookups with scopes and userset subjects agree with check", () => {
  it("property: every answered id is allowed by check and in the scope; every in-scope id check allows on the data the scope lets the walk read is answered, once, across pages", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(tupleArb, { maxLength: 16 }),
        fc.uniqueArray(attributeArb, { maxLength: 3, selector: (a) => a.split("|")[0] }),
        scopeArb,
        fc.integer({ min: 1, max: 4 }),
        async (tuples, attributes, scope, pageSize) => {
          const f = await fixture(SCHEMA, tuples, attributes);
          const scoped = await fixture(SCHEMA, readable(tuples, scope), readable(attributes, scope));
          const snap = f.store.headSnap("t1");
          const known = (type: string, objectId: string) =>
            f.store.listObjectIds("t1", snap, type).includes(objectId);
          for (const [type, permission] of QUERIES) {
            for (const s of SUBJECTS) {
              const who = subject(s);
              const label = `${type}#${permission} ${s} scope ${JSON.stringify(scope)}`;
              const found = await allEntities(f, type, permission, who, scope, pageSize);
              expect(new Set(found).size, label).toBe(found.length);
              for (const answered of found) {
                expect(scope[type] === undefined || scope[type].includes(answered), label).toBe(true);
                expect(await allowed(f, type, answered, permission, who), `${label}: ${answered}`).toBe(true);
              }
              for (const candidate of ids) {
                if (scope[type] !== undefined && !scope[type].includes(candidate)) continue;
                if (!known(type, candidate) && !(who.type === type && who.id === candidate)) continue;
                if (!(await allowed(f, type, candidate, permission, who))) continue;
                if (!(await allowed(scoped, type, candidate, permission, who))) continue;
                expect(found, `${label}: ${candidate} is allowed`).toContain(candidate);
              }
              // Without a scope the readable data is all of it: the answer is exactly the allowed ids the data
              // names, and the subject's own object (no row need name it to be reached).
              const unscoped = await allEntities(f, type, permission, who, {}, pageSize);
              for (const candidate of ids) {
                const reachable = known(type, candidate) || (who.type === type && who.id === candidate);
                expect(unscoped.includes(candidate), `${type}:${candidate} ${permission} ${s}`).toBe(
                  reachable && (await allowed(f, type, candidate, permission, who)),
                );
              }
            }
          }
          for (const [type, permission] of QUERIES)
            for (const entityId of ids)
              for (const reference of [
                { type: "user", relation: "" },
                { type: "group", relation: "member" },
                { type: "group", relation: "admin" },
                { type: "group", relation: "" },
              ]) {
                const subjects = await allSubjects(
                  f,
                  { type, id: entityId },
                  permission,
                  reference,
                  pageSize,
                );
                expect(new Set(subjects).size).toBe(subjects.length);
                for (const subjectId of ids) {
                  const who = { type: reference.type, id: subjectId, relation: reference.relation };
                  expect(
                    subjects.includes(subjectId),
                    `${type}:${entityId}#${permission} subject ${reference.type}:${subjectId}#${reference.relation}`,
                  ).toBe(
                    (known(reference.type, subjectId) ||
                      (reference.type === type && subjectId === entityId)) &&
                      (await allowed(f, type, entityId, permission, who)),
                  );
                }
              }
        },
      ),
      { numRuns: 30 },
    );
  });

  it("a scope on the subject's own type never filters the subject the walk starts from", async () => {
    const schema = `
entity user {}
entity group {
  relation admin @user
  relation owner @group
  permission comment = owner.admin
}`;
    const f = await fixture(schema, ["group:charlie#owner@group:bravo"]);
    const lookup = (scope?: Record<string, string[]>) =>
      lookupEntity(f.compiled, f.target(), {
        entityType: "group",
        permission: "comment",
        subject: subject("group:bravo#admin"),
        scope,
        pageSize: 10,
      });
    expect(await f.can("group:charlie", "comment", "group:bravo#admin")).toBe(true);
    expect(await lookup()).toEqual({ entityIds: ["charlie"], continuousToken: "" });
    expect(await lookup({ group: ["charlie"] })).toEqual({ entityIds: ["charlie"], continuousToken: "" });
    expect(await lookup({ group: ["bravo"] })).toEqual({ entityIds: [], continuousToken: "" });
  });

  it("a scope on the subject's type restricts neither the start nor another type's answer", async () => {
    const schema = `
entity user {}
entity group {
  relation admin @user
}
entity doc {
  relation owner @group
  permission comment = owner.admin
}`;
    const f = await fixture(schema, ["doc:d1#owner@group:bravo", "doc:d2#owner@group:bravo"]);
    const page = await lookupEntity(f.compiled, f.target(), {
      entityType: "doc",
      permission: "comment",
      subject: subject("group:bravo#admin"),
      scope: { doc: ["d1"], group: ["zzz"] },
      pageSize: 10,
    });
    expect(page).toEqual({ entityIds: ["d1"], continuousToken: "" });
  });

  it("a scope on an intermediate type cuts paths through its out-of-scope objects (Permify's entity filter)", async () => {
    const schema = `
entity user {}
entity folder {
  relation viewer @user
}
entity doc {
  relation folder @folder
  permission view = folder.viewer
}`;
    const f = await fixture(schema, [
      "folder:f1#viewer@user:1",
      "folder:f2#viewer@user:1",
      "doc:a#folder@folder:f1",
      "doc:b#folder@folder:f2",
    ]);
    const page = await lookupEntity(f.compiled, f.target(), {
      entityType: "doc",
      permission: "view",
      subject: subject("user:1"),
      scope: { folder: ["f2"] },
      pageSize: 10,
    });
    expect(page).toEqual({ entityIds: ["b"], continuousToken: "" });
  });
});
