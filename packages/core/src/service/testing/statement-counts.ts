/**
 * The statements-per-request suite, shared by every async SQL store (libSQL and PostgreSQL in Node:
 * statements-per-check.test.ts; D1 inside workerd: packages/worker/test/workerd/d1-statements.test.ts). Counted
 * through the executor's onQuery observer, with Permify's load-test schema: a request resolves its snap once (one
 * statement at most: head snap, GC horizon for a token, or a replica's freshness look), then runs at most one read
 * per level of the walk. Imports nothing Node-only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CheckQuery } from "../../engine/types.ts";
import type { Store } from "../../store/store.ts";
import { PembaService } from "../pemba-service.ts";
import {
  expectedView as expectedLoadTestView,
  LOAD_TEST_SCHEMA,
  loadTestData,
  VIEW_PAIRS,
} from "./load-test-schema.ts";

const IDS = 40;
const SNAP_KINDS = new Set(["head_snap", "gc_horizon", "freshness"]);
const READ_KINDS = new Set([
  "query_reads",
  "query_tuples",
  "query_subject_tuples",
  "query_attributes",
  "list_object_ids",
]);

/** The load-test schema's answer for `view` (content and interaction alike), from the seed's id pattern. */
const expectedView = (entity: number, user: number): boolean => expectedLoadTestView(IDS, entity, user);

const query = (type: string, entity: number, user: number): CheckQuery => ({
  entity: { type, id: String(entity) },
  permission: "view",
  subject: { type: "user", id: String(user), relation: "" },
});

interface Counted {
  snaps: number;
  reads: number;
  other: string[];
  kinds: string[];
}

function statementCounter() {
  let kinds: string[] = [];
  return {
    onQuery: (kind: string) => {
      kinds.push(kind);
    },
    /** Runs `op` and counts the statements it ran, by class. */
    async count<T>(op: () => Promise<T> | T): Promise<{ result: T; counted: Counted }> {
      kinds = [];
      const result = await op();
      const counted: Counted = { snaps: 0, reads: 0, other: [], kinds };
      for (const k of kinds) {
        if (SNAP_KINDS.has(k)) counted.snaps++;
        else if (READ_KINDS.has(k)) counted.reads++;
        else counted.other.push(k);
      }
      return { result, counted };
    },
  };
}

export type Opener = (onQuery: (kind: string) => void) => Promise<Store>;

export function describeStatementCounts(name: string, open: () => Opener): void {
  describe(`statements per request: ${name}`, () => {
    let service: PembaService;
    let store: Store;
    let token: string;
    const counter = statementCounter();

    beforeAll(async () => {
      store = await open()(counter.onQuery);
      // the head schema's TTL outlasts the suite: its timed re-read is not a statement of any one request, and on a
      // busy machine a 1 s TTL would expire between two requests and be counted against the one that follows
      service = new PembaService(store, { headSchemaTtlMs: 3_600_000 });
      await service.writeSchema("t1", LOAD_TEST_SCHEMA);
      const { tuples, attributes } = loadTestData(IDS);
      token = await service.writeData("t1", "", tuples, attributes);
      // compiles the head schema into the cache and records the snap it was read at (a schema this process wrote
      // is read once more by the first request with a snap token): the counts below are the steady state
      await service.check("t1", { schemaVersion: "", snapToken: token, depth: 20 }, query("content", 0, 0));
    });
    afterAll(async () => {
      await store?.close();
    });

    const meta = (snapToken = "") => ({ schemaVersion: "", snapToken, depth: 20 });

    for (const [type, maxReads] of [
      ["content", 2],
      ["interaction", 3],
    ] as const) {
      it(`${type}#view: one snap statement, at most ${maxReads} reads, exact decisions`, async () => {
        for (const [entity, user] of VIEW_PAIRS) {
          for (const snapToken of ["", token]) {
            const { result, counted } = await counter.count(() =>
              service.check("t1", meta(snapToken), query(type, entity, user)),
            );
            if (entity === 5 && user === 6)
              console.log(
                `${name} ${type}#view (snap token: ${snapToken !== ""}): ${counted.kinds.join(" ")}`,
              );
            expect(result.can).toBe(
              expectedView(entity, user) ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED",
            );
            expect(counted.other).toEqual([]);
            expect(counted.snaps).toBe(1);
            expect(counted.reads).toBeLessThanOrEqual(maxReads);
          }
        }
      });
    }

    it("bulk check: one snap statement and the reads of one check, for 20 items", async () => {
      const items = Array.from({ length: 20 }, (_, i) => query(i % 2 ? "content" : "interaction", i, i + 1));
      const { result, counted } = await counter.count(() => service.bulkCheck("t1", meta(), items));
      expect(result.map((o) => o.can)).toEqual(
        items.map((_, i) => (expectedView(i, i + 1) ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED")),
      );
      console.log(`${name} bulk: ${counted.kinds.join(" ")}`);
      expect(counted).toMatchObject({ snaps: 1, other: [] });
      expect(counted.reads).toBeLessThanOrEqual(3);
    });

    it("lookup-entity and lookup-subject: one snap statement, reads batched per level", async () => {
      const entities = await counter.count(() =>
        service.lookupEntity("t1", meta(), {
          entityType: "content",
          permission: "view",
          subject: { type: "user", id: "9", relation: "" },
          pageSize: 100,
          continuousToken: "",
        }),
      );
      const expected = Array.from({ length: IDS }, (_, e) => e).filter((e) => expectedView(e, 9));
      expect(entities.result.entityIds.map(Number).sort((a, b) => a - b)).toEqual(expected);
      expect(entities.counted.snaps).toBe(1);
      expect(entities.counted.other).toEqual([]);
      const subjects = await counter.count(() =>
        service.lookupSubject("t1", meta(), {
          entity: { type: "content", id: "5" },
          permission: "view",
          subjectReference: { type: "user", relation: "" },
          pageSize: 100,
          continuousToken: "",
        }),
      );
      expect(subjects.result.subjectIds.map(Number).sort((a, b) => a - b)).toEqual(
        Array.from({ length: IDS }, (_, u) => u).filter((u) => expectedView(5, u)),
      );
      expect(subjects.counted.snaps).toBe(1);
      expect(subjects.counted.other).toEqual([]);
      console.log(
        `${name}: lookup-entity ${entities.counted.reads} reads, lookup-subject ${subjects.counted.reads} reads`,
      );
    });
  });
}
