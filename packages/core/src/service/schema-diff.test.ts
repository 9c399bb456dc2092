import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PembaError } from "../errors.ts";
import type { Attribute, Tuple } from "../model.ts";
import { diffSchemas } from "../schema/diff.ts";
import { parseSchema } from "../schema/index.ts";
import { PostgresStore } from "../store/drivers/postgres.ts";
import { SqliteStore } from "../store/drivers/sqlite.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { ReplicaStore } from "../store/proxies/replica/index.ts";
import type { Store } from "../store/store.ts";
import { type PostgresServer, startPostgres } from "../store/testing/postgres-server.ts";
import { PembaService } from "./pemba-service.ts";
import { orphanList, structuralReport } from "./schema-diff.ts";
import { expectedView, LOAD_TEST_SCHEMA, loadTestData } from "./testing/load-test-schema.ts";

const OLD = `entity user {}
entity team { relation member @user }
entity doc {
  relation owner @user
  relation viewer @user @team#member
  relation archived_by @user
  attribute public boolean
  attribute level integer
  permission own = owner
  permission edit = owner
  permission view = owner or viewer or public
  permission audit = owner
}`;

const NEW = `entity user {}
entity doc {
  relation owner @user
  relation viewer @user
  attribute public boolean
  attribute level string
  attribute region string
  permission own = owner
  permission edit = owner or viewer
  permission view = owner or viewer or public
}`;

const u = (id: string) => ({ type: "user", id, relation: "" });
const tuple = (type: string, id: string, relation: string, subject: Tuple["subject"]): Tuple => ({
  entity: { type, id },
  relation,
  subject,
});
const TUPLES: Tuple[] = [
  tuple("doc", "1", "owner", u("alice")),
  tuple("doc", "1", "viewer", { type: "team", id: "a", relation: "member" }),
  tuple("team", "a", "member", u("bob")),
  tuple("doc", "2", "viewer", u("carol")),
  tuple("doc", "3", "archived_by", u("alice")),
];
const ATTRIBUTES: Attribute[] = [
  {
    entity: { type: "doc", id: "2" },
    attribute: "public",
    value: { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true },
  },
  {
    entity: { type: "doc", id: "1" },
    attribute: "level",
    value: { type: "ATTRIBUTE_TYPE_INTEGER", data: 3 },
  },
  {
    entity: { type: "doc", id: "2" },
    attribute: "level",
    value: { type: "ATTRIBUTE_TYPE_INTEGER", data: 5 },
  },
];

const dir = mkdtempSync(join(tmpdir(), "pemba-schema-diff-"));
let files = 0;
let postgres: PostgresServer | undefined;
let admin: pg.Pool | undefined;
beforeAll(async () => {
  postgres = await startPostgres();
  admin = new pg.Pool({ connectionString: postgres.url, max: 1 });
});
afterAll(async () => {
  await admin?.end();
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh PostgreSQL database per test. */
async function freshPostgres(): Promise<Store> {
  const name = `pemba_diff_${files++}`;
  await admin!.query(`CREATE DATABASE ${name}`);
  return PostgresStore.open(postgres!.url.replace(/\/postgres$/, `/${name}`));
}

const STORES: [string, () => Store | Promise<Store>][] = [
  ["memory", () => new MemoryStore()],
  ["SQLite file", () => SqliteStore.open(join(dir, `diff-${files++}.db`))],
  ["PostgreSQL", freshPostgres],
  [
    "SQLite + replica",
    () => ReplicaStore.open(SqliteStore.open(join(dir, `diff-${files++}.db`)), { refreshMs: 0 }),
  ],
];

async function seeded(open: () => Store | Promise<Store>, opts = {}): Promise<PembaService> {
  const service = new PembaService(await open(), opts);
  const version = await service.writeSchema("t1", OLD);
  await service.writeData("t1", version, TUPLES, ATTRIBUTES);
  return service;
}

describe("diffSchemas (structure)", () => {
  it("lists removals (entity, members, subject types), additions, type changes and the permissions that may flip", () => {
    const d = diffSchemas(parseSchema(OLD), parseSchema(NEW));
    expect(d.removed).toEqual([
      { kind: "ENTITY", entity: "team", name: "" },
      { kind: "RELATION", entity: "doc", name: "archived_by" },
      { kind: "PERMISSION", entity: "doc", name: "audit" },
    ]);
    expect(d.added).toEqual([{ kind: "ATTRIBUTE", entity: "doc", name: "region" }]);
    expect(d.attributeTypeChanges).toEqual([
      { entity: "doc", attribute: "level", from: "ATTRIBUTE_TYPE_INTEGER", to: "ATTRIBUTE_TYPE_STRING" },
    ]);
    // edit's expression changed; view's did not, but its relation viewer lost a subject type; own is untouched
    expect(d.affectedPermissions).toEqual([
      { entity: "doc", permission: "edit", subjectTypes: ["user"] },
      { entity: "doc", permission: "view", subjectTypes: ["user"] },
    ]);
    expect(d.unchangedPermissions).toBe(1);
  });

  it("a subject type dropped from a kept relation, a member turned into another kind, a changed rule", () => {
    const from = parseSchema(`entity user {}
entity group { relation member @user }
entity doc {
  relation reader @user @group#member
  relation note @user
  attribute age integer
  permission read = reader or check_age(age)
}
rule check_age(age integer) { age >= 18 }`);
    const to = parseSchema(`entity user {}
entity group { relation member @user }
entity doc {
  relation reader @user
  attribute age integer
  permission note = reader
  permission read = reader or check_age(age)
}
rule check_age(age integer) { age >= 21 }`);
    const d = diffSchemas(from, to);
    expect(d.removed).toEqual([
      { kind: "RELATION", entity: "doc", name: "note" },
      { kind: "RELATION_SUBJECT", entity: "doc", name: "reader", subject: "group#member" },
    ]);
    expect(d.added).toEqual([{ kind: "PERMISSION", entity: "doc", name: "note" }]);
    expect(d.affectedPermissions).toEqual([{ entity: "doc", permission: "read", subjectTypes: ["user"] }]);
    // the same schema: nothing
    expect(diffSchemas(from, from)).toEqual({
      removed: [],
      added: [],
      attributeTypeChanges: [],
      affectedPermissions: [],
      unchangedPermissions: 1,
    });
  });

  it("without data: the structure, no counts", () => {
    const r = structuralReport(parseSchema(OLD), parseSchema(NEW));
    expect(r.measured).toBe(false);
    expect(r.removed[0]).toEqual({ kind: "ENTITY", entity: "team", name: "" });
    expect(r.permissions.map((p) => p.checked)).toEqual([undefined, undefined]);
  });
});

describe.each(STORES)("schema diff on the data (%s)", (_name, open) => {
  it("counts the live rows each removal orphans, the values of a changed type, and every flipped pair", async () => {
    const service = await seeded(open);
    // a deleted row is not live: doc:4's owner was written and deleted
    const v = await service.writeSchema("t1", OLD);
    await service.writeData("t1", v, [tuple("doc", "4", "archived_by", u("dave"))], []);
    await service.deleteRelationships("t1", { entity: { type: "doc", ids: ["4"] } });
    const { report, baseVersion } = await service.diffSchema("t1", {
      baseVersion: "",
      schema: NEW,
      snapToken: "",
    });
    expect(baseVersion).toBe(v);
    expect(report.removed).toEqual([
      // team:a#member@bob, and doc:1#viewer@team:a#member naming it as subject
      { kind: "ENTITY", entity: "team", name: "", tuples: 2, attributes: 0 },
      { kind: "RELATION", entity: "doc", name: "archived_by", tuples: 1, attributes: 0 },
      { kind: "PERMISSION", entity: "doc", name: "audit", tuples: 0, attributes: 0 },
    ]);
    expect(report.attributeTypeChanges).toEqual([
      {
        entity: "doc",
        attribute: "level",
        from: "ATTRIBUTE_TYPE_INTEGER",
        to: "ATTRIBUTE_TYPE_STRING",
        values: 2,
        mismatched: 2,
      },
    ]);
    // docs 1, 2, 3 (4 only in history) x users alice, bob, carol, dave (dave is in history only too)
    const [edit, view] = report.permissions;
    expect(edit).toMatchObject({
      entity: "doc",
      permission: "edit",
      sampled: false,
      allowedToDenied: 0,
      deniedToAllowed: 1,
    });
    expect(edit?.examples).toEqual([
      {
        entity: { type: "doc", id: "2" },
        subject: u("carol"),
        from: "CHECK_RESULT_DENIED",
        to: "CHECK_RESULT_ALLOWED",
      },
    ]);
    // bob saw doc 1 through team a, which the new schema no longer has
    expect(view).toMatchObject({ entity: "doc", permission: "view", allowedToDenied: 1, deniedToAllowed: 0 });
    expect(view?.examples).toEqual([
      {
        entity: { type: "doc", id: "1" },
        subject: u("bob"),
        from: "CHECK_RESULT_ALLOWED",
        to: "CHECK_RESULT_DENIED",
      },
    ]);
    expect(edit?.pairs).toBe(edit?.checked);
    expect(report.unchangedPermissions).toBe(1);
    expect(orphanList(report)).toEqual([
      "entity team (2 tuples)",
      "relation doc#archived_by (1 tuple)",
      "attribute doc#level ATTRIBUTE_TYPE_INTEGER -> ATTRIBUTE_TYPE_STRING (2 stored values no longer fit)",
    ]);
    await service.store.close();
  });

  it("a diff at an older snap token measures the data as it was then; a base given as text", async () => {
    const service = await seeded(open);
    const head = await service.resolveSchema("t1", "");
    const before = await service.writeData(
      "t1",
      head.version,
      [tuple("doc", "5", "archived_by", u("erin"))],
      [],
    );
    await service.deleteRelationships("t1", { relation: "archived_by" });
    const now = await service.diffSchema("t1", { baseVersion: "", schema: NEW, snapToken: "" });
    const then = await service.diffSchema("t1", { baseVersion: "", schema: NEW, snapToken: before });
    expect(now.report.removed[1]).toMatchObject({ name: "archived_by", tuples: 0 });
    expect(then.report.removed[1]).toMatchObject({ name: "archived_by", tuples: 2 });
    expect(then.snapToken).toBe(before);
    const fromText = await service.diffSchema("t1", {
      baseVersion: "",
      baseSchema: OLD,
      schema: NEW,
      snapToken: "",
    });
    expect(fromText.baseVersion).toBe("");
    expect(fromText.report).toEqual(now.report);
    await service.store.close();
  });

  it("safe schema writes refuse a write that orphans live rows, name them, write nothing; Permify's default writes", async () => {
    const safe = await seeded(open, { schemaWrites: "safe" });
    const head = await safe.resolveSchema("t1", "");
    const error = await safe.writeSchema("t1", NEW).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PembaError);
    expect((error as PembaError).code).toBe("ERROR_CODE_VALIDATION");
    expect((error as PembaError).httpStatus).toBe(400);
    expect((error as PembaError).message).toBe(
      "schema write would orphan live rows: entity team (2 tuples); relation doc#archived_by (1 tuple); " +
        "attribute doc#level ATTRIBUTE_TYPE_INTEGER -> ATTRIBUTE_TYPE_STRING (2 stored values no longer fit); " +
        'delete or migrate them first (schema writes are "safe")',
    );
    // a partial write that removes a relation with rows is refused the same way
    const partial = await safe
      .partialWriteSchema("t1", "", { doc: { write: [], update: [], delete: ["archived_by"] } })
      .catch((e: unknown) => e);
    expect((partial as PembaError).message).toMatch(
      /^schema write would orphan live rows: relation doc#archived_by \(1 tuple\);/,
    );
    expect((await safe.listSchemas("t1", 10, "")).head).toBe(head.version);
    // removing what holds no rows (the permission audit, an empty relation) is allowed
    const emptied = OLD.replace("  permission audit = owner\n", "");
    expect(await safe.writeSchema("t1", emptied)).not.toBe(head.version);
    // after the rows are gone, the change is allowed
    await safe.deleteRelationships("t1", { entity: { type: "team" } });
    await safe.deleteRelationships("t1", { subject: { type: "team" } });
    await safe.deleteRelationships("t1", { relation: "archived_by" });
    await safe.deleteData("t1", {}, { attributes: ["level"] });
    const written = await safe.writeSchema("t1", NEW);
    expect((await safe.listSchemas("t1", 10, "")).head).toBe(written);
    await safe.store.close();

    const permify = await seeded(open);
    expect(await permify.writeSchema("t1", NEW)).toMatch(/^[0-9a-v]{20}$/);
    await permify.store.close();
  });
  it("names of Object.prototype (constructor, __proto__) are diffed like any other; safe mode can drop them", async () => {
    const PROTO = `entity user {}
entity constructor {
  relation owner @user
}
entity __proto__ {
  relation toString @user
  permission hasOwnProperty = toString
}`;
    const safe = new PembaService(await open(), { schemaWrites: "safe" });
    const version = await safe.writeSchema("t1", PROTO);
    await safe.writeData(
      "t1",
      version,
      [tuple("constructor", "c", "owner", u("alice")), tuple("__proto__", "p", "toString", u("bob"))],
      [],
    );
    const { report } = await safe.diffSchema("t1", {
      baseVersion: "",
      schema: "entity user {}",
      snapToken: "",
    });
    expect(report.removed).toEqual([
      { kind: "ENTITY", entity: "constructor", name: "", tuples: 1, attributes: 0 },
      { kind: "ENTITY", entity: "__proto__", name: "", tuples: 1, attributes: 0 },
    ]);
    const added = await safe.diffSchema("t1", {
      baseVersion: "",
      baseSchema: "entity user {}",
      schema: PROTO,
      snapToken: "",
    });
    expect(added.report.added.map((a) => `${a.kind} ${a.entity}`)).toEqual([
      "ENTITY constructor",
      "ENTITY __proto__",
    ]);
    await expect(safe.writeSchema("t1", "entity user {}")).rejects.toMatchObject({
      code: "ERROR_CODE_VALIDATION",
      message: expect.stringContaining("entity constructor (1 tuple); entity __proto__ (1 tuple)"),
    });
    await safe.deleteRelationships("t1", { entity: { type: "constructor" } });
    await safe.deleteRelationships("t1", { entity: { type: "__proto__" } });
    expect(await safe.writeSchema("t1", "entity user {}")).toMatch(/^[0-9a-v]{20}$/);
    await safe.store.close();
  });

  it("safe mode: a data write naming an older schema version cannot store rows the head schema dropped", async () => {
    const safe = await seeded(open, { schemaWrites: "safe" });
    const old = (await safe.listSchemas("t1", 10, "")).head;
    await safe.deleteRelationships("t1", { relation: "archived_by" });
    const dropped = OLD.replace("  relation archived_by @user\n", "");
    const head = await safe.writeSchema("t1", dropped);
    await expect(
      safe.writeData("t1", old, [tuple("doc", "9", "archived_by", u("eve"))], []),
    ).rejects.toMatchObject({
      code: "ERROR_CODE_VALIDATION",
      message: `data write names schema version ${old}, but tuple doc:9#archived_by@user:eve does not fit the head schema ${head} (ERROR_CODE_RELATION_DEFINITION_NOT_FOUND); schema writes are "safe", so rows the head schema dropped are not written`,
    });
    expect((await safe.readRelationships("t1", "", { relation: "archived_by" }, 10, "")).items).toEqual([]);
    // rows the head schema still has are written under the old version
    await safe.writeData("t1", old, [tuple("doc", "9", "owner", u("eve"))], []);
    const { report } = await safe.diffSchema("t1", { baseVersion: old, schema: dropped, snapToken: "" });
    expect(report.removed).toEqual([
      { kind: "RELATION", entity: "doc", name: "archived_by", tuples: 0, attributes: 0 },
    ]);
    await safe.store.close();
  });
});

describe("schema diff sampling (Permify's load-test data, 2,000 ids)", () => {
  const N = 2000;
  // the blocked user no longer loses access to public content
  const NEXT = LOAD_TEST_SCHEMA.replace(
    "permission view = owner.self or (is_public or owner.follower) not owner.blocked",
    "permission view = owner.self or (is_public or owner.follower)",
  );

  async function service() {
    const s = new PembaService(new MemoryStore());
    const version = await s.writeSchema("t1", LOAD_TEST_SCHEMA);
    const data = loadTestData(N);
    for (let i = 0; i < data.tuples.length; i += 1000)
      await s.writeData("t1", version, data.tuples.slice(i, i + 1000), []);
    for (let i = 0; i < data.attributes.length; i += 1000)
      await s.writeData("t1", version, [], data.attributes.slice(i, i + 1000));
    return s;
  }

  it("above the sample size: a seeded sample of that many pairs, stated; every example is a real flip; repeatable", async () => {
    const s = await service();
    const a = await s.diffSchema("t1", { baseVersion: "", schema: NEXT, snapToken: "", sampleSize: 2000 });
    // content.view changed; interaction.view reads content's view through parent.view
    expect(a.report.permissions.map((p) => `${p.entity}.${p.permission}`)).toEqual([
      "content.view",
      "interaction.view",
    ]);
    const [content, interaction] = a.report.permissions;
    for (const p of a.report.permissions)
      expect(p).toMatchObject({ pairs: N * N, checked: 2000, sampled: true, allowedToDenied: 0 });
    // content's flips are (content i, its owner's blocked user i+2) of public content: found by walking the tuples
    expect(content?.deniedToAllowed).toBeGreaterThan(0);
    expect(content?.examples?.length).toBe(5);
    for (const e of content?.examples ?? []) {
      const entity = Number(e.entity.id);
      const user = Number(e.subject.id);
      expect(user).toBe((entity + 2) % N);
      expect(entity % 4).toBe(0);
      expect(expectedView(N, entity, user)).toBe(false);
    }
    // interaction i also needs its creator's (user i's) view, which user i+2 never has: nothing flips
    expect(interaction).toMatchObject({ deniedToAllowed: 0, examples: [] });
    expect(a.report.sample).toEqual({ size: 2000, seed: 1, pairBudget: 50000, limitedByBudget: false });
    const b = await s.diffSchema("t1", { baseVersion: "", schema: NEXT, snapToken: "", sampleSize: 2000 });
    expect(b.report).toEqual(a.report);
  });
});

describe("schema diff work: a budget per request, the event loop shared", () => {
  // 200 entity types of 50 docs each; the change drops a relation from every one
  const TYPES = 200;
  const schemaOf = (withEditor: boolean) =>
    `entity user {}\n${Array.from(
      { length: TYPES },
      (_, i) =>
        `entity e${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))} {\n relation owner @user\n${withEditor ? " relation editor @user\n" : ""} permission edit = owner${withEditor ? " or editor" : ""}\n}`,
    ).join("\n")}`;
  const typeName = (i: number) =>
    `e${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`;

  async function big(open: () => Store | Promise<Store>, opts = {}) {
    const s = new PembaService(await open(), opts);
    const version = await s.writeSchema("t1", schemaOf(true));
    const tuples: Tuple[] = [];
    for (let t = 0; t < TYPES; t++)
      for (let d = 0; d < 25; d++) {
        tuples.push(tuple(typeName(t), `d${d}`, "owner", u(`u${d}`)));
        tuples.push(tuple(typeName(t), `d${d}`, "editor", u(`u${d + 1}`)));
      }
    for (let i = 0; i < tuples.length; i += 1000)
      await s.writeData("t1", version, tuples.slice(i, i + 1000), []);
    return { s, rows: tuples.length };
  }

  it.each([
    ["memory", () => new MemoryStore()],
    [
      "SQLite + replica",
      () => ReplicaStore.open(SqliteStore.open(join(dir, `work-${files++}.db`)), { refreshMs: 0 }),
    ],
  ] as const)(
    "%s: 200 removals read each row once, a turn per page; 200 permissions share the pair budget",
    async (_name, open) => {
      const { s, rows } = await big(open);
      const { report } = await s.diffSchema("t1", {
        baseVersion: "",
        schema: schemaOf(false),
        snapToken: "",
      });
      expect(report.removed).toHaveLength(TYPES);
      for (const r of report.removed)
        expect(r).toMatchObject({ kind: "RELATION", name: "editor", tuples: 25 });
      // one pass over the rows for every removal and the ids of every asked type
      expect(report.work.rows).toBe(rows);
      expect(report.work.turns).toBeGreaterThanOrEqual(Math.ceil(rows / 1000) + (2 * 50_000) / 100 / 2);
      // 200 permissions x 25 x 26 pairs = 130,000 > the 50,000 budget: 250 pairs each, labelled
      expect(report.sample).toEqual({ size: 5000, seed: 1, pairBudget: 50_000, limitedByBudget: true });
      // a sample drops the pairs it draws twice
      expect(report.work.pairs).toBe(report.permissions.reduce((n, p) => n + (p.checked ?? 0), 0));
      expect(report.work.pairs).toBeLessThanOrEqual(50_000);
      for (const p of report.permissions) {
        expect(p).toMatchObject({ pairs: 25 * 26, sampled: true, deniedToAllowed: 0 });
        // 250 each (the pairs earlier permissions drew twice are left to later ones)
        expect(p.checked).toBeGreaterThan(200);
      }
      expect(report.permissions.reduce((n, p) => n + (p.allowedToDenied ?? 0), 0)).toBeGreaterThan(0);
      await s.store.close();
    },
  );

  it("over the rows budget: 429 RESOURCE_EXHAUSTED naming the request, for a diff and a safe write", async () => {
    const { s } = await big(() => new MemoryStore(), { schemaWrites: "safe", diffBudget: { rows: 5000 } });
    const head = (await s.listSchemas("t1", 10, "")).head;
    const over = s.diffSchema("t1", { baseVersion: "", schema: schemaOf(false), snapToken: "" });
    await expect(over).rejects.toMatchObject({
      code: "ERROR_CODE_EXECUTION",
      grpcCode: 8,
      message: "schema diff would read more than 5000 rows (its work budget per request)",
    });
    await expect(s.writeSchema("t1", schemaOf(false))).rejects.toMatchObject({
      code: "ERROR_CODE_EXECUTION",
      grpcCode: 8,
      message: "safe schema write would read more than 5000 rows (its work budget per request)",
    });
    expect((await s.listSchemas("t1", 10, "")).head).toBe(head);
    await s.store.close();
  });

  it("other requests are answered between the diff's turns", async () => {
    const { s } = await big(() => new MemoryStore());
    let ticks = 0;
    let running = true;
    const tick = () => {
      ticks++;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    const { report } = await s.diffSchema("t1", { baseVersion: "", schema: schemaOf(false), snapToken: "" });
    running = false;
    // a task queued on the event loop runs at least once per turn the diff gives back
    expect(ticks).toBeGreaterThanOrEqual(report.work.turns);
    await s.store.close();
  });
});
