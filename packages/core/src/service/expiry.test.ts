/**
 * Expiring relationships and attributes, end to end through the service with a controllable clock: a row is never
 * granted at or after its expiry and always granted before it, on the memory store and on a replica over SQLite
 * that catches up from another process's writes (and sweeps) through the change feed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import type { Attribute, Tuple } from "../model.ts";
import { SqliteStore } from "../store/drivers/sqlite.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { ReplicaStore } from "../store/proxies/replica/index.ts";
import { PembaService } from "./pemba-service.ts";

const SCHEMA = `entity user {}
entity doc {
  relation viewer @user
  attribute public boolean
  permission view = viewer
  permission see = public
}`;

const T0 = Date.UTC(2030, 0, 1);
const DOCS = ["1", "2", "3"];
const USERS = ["a", "b"];

const dir = mkdtempSync(join(tmpdir(), "pemba-expiry-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Op =
  | { kind: "tuple"; doc: string; user: string; expiresIn: number | null }
  | { kind: "attribute"; doc: string; expiresIn: number | null }
  | { kind: "tick"; ms: number }
  | { kind: "sweep" };

const expiresIn = fc.option(fc.integer({ min: -50, max: 400 }), { nil: null });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("tuple" as const),
    doc: fc.constantFrom(...DOCS),
    user: fc.constantFrom(...USERS),
    expiresIn,
  }),
  fc.record({ kind: fc.constant("attribute" as const), doc: fc.constantFrom(...DOCS), expiresIn }),
  fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 200 }) }),
  fc.constant({ kind: "sweep" as const }),
);

const viewer = (doc: string, user: string, expiresAt: number | undefined): Tuple => ({
  entity: { type: "doc", id: doc },
  relation: "viewer",
  subject: { type: "user", id: user, relation: "" },
  ...(expiresAt === undefined ? {} : { expiresAt }),
});
const isPublic = (doc: string, expiresAt: number | undefined): Attribute => ({
  entity: { type: "doc", id: doc },
  attribute: "public",
  value: { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true },
  ...(expiresAt === undefined ? {} : { expiresAt }),
});

/** A writer and a reader (the same service, or another process's over the same database) on one clock. */
interface Setup {
  writer: PembaService;
  reader: PembaService;
  clock: { now: number };
  close(): Promise<void>;
}

let files = 0;
const setups: Record<string, () => Promise<Setup>> = {
  memory: async () => {
    const clock = { now: T0 };
    const service = new PembaService(new MemoryStore(), { clock: () => clock.now });
    return { writer: service, reader: service, clock, close: () => service.store.close() };
  },
  "replica over sqlite, written by another process": async () => {
    const clock = { now: T0 };
    const file = join(dir, `expiry-${files++}.db`);
    const writer = new PembaService(SqliteStore.open(file), { clock: () => clock.now });
    const replica = await ReplicaStore.open(SqliteStore.open(file), { refreshMs: 0 });
    if (!(replica instanceof ReplicaStore)) throw new Error("expected a replica");
    const reader = new PembaService(replica, { clock: () => clock.now });
    return {
      writer,
      reader,
      clock,
      close: async () => {
        await replica.close();
        await writer.store.close();
      },
    };
  },
};

describe.each(Object.keys(setups))("expiry with a controllable clock: %s", (name) => {
  it("a row is granted strictly before its expiry and never at or after it, across catch-up and sweeps", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        const { writer, reader, clock, close } = await setups[name]!();
        try {
          await writer.writeSchema("t1", SCHEMA);
          // the model: the expiry of each live row (undefined = never)
          const tuples = new Map<string, number | undefined>();
          const attributes = new Map<string, number | undefined>();
          let token = "";
          for (const o of ops) {
            if (o.kind === "tick") clock.now += o.ms;
            else if (o.kind === "sweep") {
              token = (await writer.sweepExpired("t1")) ?? token;
              for (const [k, e] of tuples) if (e !== undefined && e <= clock.now) tuples.delete(k);
              for (const [k, e] of attributes) if (e !== undefined && e <= clock.now) attributes.delete(k);
            } else {
              const expiresAt = o.expiresIn === null ? undefined : clock.now + o.expiresIn;
              if (o.kind === "tuple") {
                token = await writer.writeData("t1", "", [viewer(o.doc, o.user, expiresAt)], []);
                tuples.set(`${o.doc}@${o.user}`, expiresAt);
              } else {
                token = await writer.writeData("t1", "", [], [isPublic(o.doc, expiresAt)]);
                attributes.set(o.doc, expiresAt);
              }
            }
            // every read path at this time, with the newest token (the replica catches up to it)
            const meta = { schemaVersion: "", snapToken: token, depth: 10 };
            const live = (e: number | undefined) => e === undefined || clock.now < e;
            for (const doc of DOCS) {
              for (const user of USERS) {
                const k = `${doc}@${user}`;
                const expected = tuples.has(k) && live(tuples.get(k));
                const query = {
                  entity: { type: "doc", id: doc },
                  permission: "view",
                  subject: { type: "user", id: user, relation: "" },
                };
                const got = await reader.check("t1", meta, query);
                expect(got.can, `${k} at +${clock.now - T0}`).toBe(
                  expected ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED",
                );
                // explain evaluates at the request's time too: it agrees with check on expired rows
                expect((await reader.explain("t1", meta, query)).can, `explain ${k}`).toBe(got.can);
              }
              const seeQuery = {
                entity: { type: "doc", id: doc },
                permission: "see",
                subject: { type: "user", id: "a", relation: "" },
              };
              const see = await reader.check("t1", meta, seeQuery);
              const pub = attributes.has(doc) && live(attributes.get(doc));
              expect(see.can, `public ${doc}`).toBe(pub ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED");
              expect((await reader.explain("t1", meta, seeQuery)).can, `explain public ${doc}`).toBe(see.can);
            }
            for (const user of USERS) {
              const { entityIds } = await reader.lookupEntity("t1", meta, {
                entityType: "doc",
                permission: "view",
                subject: { type: "user", id: user, relation: "" },
                pageSize: 100,
              });
              const expected = DOCS.filter(
                (d) => tuples.has(`${d}@${user}`) && live(tuples.get(`${d}@${user}`)),
              );
              expect([...entityIds].sort()).toEqual(expected);
            }
            // bulk-check, lookup-subject, subject-permission and expand agree with the model too
            const grants = (doc: string, user: string) =>
              tuples.has(`${doc}@${user}`) && live(tuples.get(`${doc}@${user}`));
            const bulk = await reader.bulkCheck(
              "t1",
              meta,
              DOCS.map((doc) => ({
                entity: { type: "doc", id: doc },
                permission: "view",
                subject: { type: "user", id: "b", relation: "" },
              })),
            );
            expect(bulk.map((b) => b.can === "CHECK_RESULT_ALLOWED")).toEqual(
              DOCS.map((d) => grants(d, "b")),
            );
            for (const doc of DOCS) {
              const { subjectIds } = await reader.lookupSubject("t1", meta, {
                entity: { type: "doc", id: doc },
                permission: "view",
                subjectReference: { type: "user", relation: "" },
                pageSize: 100,
              });
              expect([...subjectIds].sort()).toEqual(USERS.filter((u) => grants(doc, u)));
              const perms = await reader.subjectPermission(
                "t1",
                meta,
                { type: "doc", id: doc },
                { type: "user", id: "a", relation: "" },
                false,
              );
              expect(perms.view).toBe(grants(doc, "a") ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED");
              const tree = JSON.stringify(await reader.expand("t1", meta, { type: "doc", id: doc }, "view"));
              for (const u of USERS)
                expect(tree.includes(`"id":"${u}"`), `expand ${doc} ${u}`).toBe(grants(doc, u));
            }
            const read = await reader.readRelationships("t1", token, {}, 100, "");
            const expectedRead = [...tuples].filter(([, e]) => live(e)).map(([k]) => k);
            expect(read.items.map((t) => `${t.entity.id}@${t.subject.id}`).sort()).toEqual(
              expectedRead.sort(),
            );
          }
        } finally {
          await close();
        }
      }),
      { numRuns: name === "memory" ? 60 : 25 },
    );
  });
});
