/**
 * Every statement the shared SQL store sends through d1Dialect stays within D1's per-statement limits (100 bound
 * parameters, 100 KB of SQL), for any batch of engine reads, filtered reads and writes (property test). The
 * combined level read (queryReadsStatement) may exceed them: SqlStore then sends its two halves, which stay within.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Statement } from "../sql/dialect.ts";
import {
  queryAttributesStatement,
  queryReadsStatement,
  querySubjectTuplesStatement,
  queryTuplesStatement,
  readAttributesStatement,
  readTuplesStatement,
} from "../sql/read-plan.ts";
import { planWrite } from "../sql/write-plan.ts";
import {
  attributeFilter,
  attributeQuery,
  queries,
  subjectQuery,
  tupleFilter,
  tupleQuery,
  writeRequest,
} from "../testing/arbitraries.ts";
import { d1Dialect } from "./d1.ts";
import { D1_LIMITS } from "./d1-binding.ts";

const utf8 = new TextEncoder();
const within = (s: Statement) =>
  s.params.length <= D1_LIMITS.maxParams && utf8.encode(s.sql).length <= D1_LIMITS.maxSqlBytes;

describe("d1Dialect statements within D1's limits", () => {
  it("engine reads: tuples, subject tuples, attributes; the combined level read or its two halves", () => {
    fc.assert(
      fc.property(queries(tupleQuery), queries(subjectQuery), queries(attributeQuery), (t, s, a) => {
        expect(within(queryTuplesStatement(d1Dialect, "t1", 7, t, 5))).toBe(true);
        expect(within(querySubjectTuplesStatement(d1Dialect, "t1", 7, s, 5))).toBe(true);
        expect(within(queryAttributesStatement(d1Dialect, "t1", 7, a, 5))).toBe(true);
        const combined = queryReadsStatement(d1Dialect, "t1", 7, t, a, 5);
        if (combined.params.length > d1Dialect.maxParams) {
          expect(within(queryTuplesStatement(d1Dialect, "t1", 7, t, 5))).toBe(true);
          expect(within(queryAttributesStatement(d1Dialect, "t1", 7, a, 5))).toBe(true);
        } else {
          expect(within(combined)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("filtered reads and writes (deletes by key and by filter, inserts, attribute upserts)", () => {
    fc.assert(
      fc.property(tupleFilter, attributeFilter, writeRequest(1000, 300, 50), (tf, af, req) => {
        expect(within(readTuplesStatement(d1Dialect, "t1", 7, 5, tf, 0, 101))).toBe(true);
        expect(within(readAttributesStatement(d1Dialect, "t1", 7, 5, af, 0, 101))).toBe(true);
        for (const s of planWrite(d1Dialect, "t1", req, 0)) expect(within(s)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it("an import chunk of the Worker's import route (5,000 rows): its reads and its write, a few statements each", () => {
    const ids = Array.from({ length: 5000 }, (_, i) => `d${i}`);
    const tuples = ids.map((id, i) => ({
      entity: { type: "doc", id },
      relation: "viewer",
      subject: { type: "user", id: `u${i}`, relation: i % 2 === 0 ? "" : "member" },
      ...(i % 3 === 0 ? { expiresAt: 1_900_000_000_000 + i } : {}),
    }));
    const attributes = ids.map((id, i) => ({
      entity: { type: "doc", id },
      attribute: "level",
      value: { type: "ATTRIBUTE_TYPE_INTEGER" as const, data: i },
    }));
    // dump/import.ts compares a chunk with the tenant's rows: one read per (entity type, relation) with every id
    const read = readTuplesStatement(
      d1Dialect,
      "t1",
      7,
      0,
      { entity: { type: "doc", ids }, relation: "viewer" },
      0,
      0,
    );
    const readAttrs = readAttributesStatement(
      d1Dialect,
      "t1",
      7,
      0,
      { entity: { type: "doc", ids }, attributes: ["level"] },
      0,
      0,
    );
    expect(within(read) && within(readAttrs)).toBe(true);
    const writes = planWrite(d1Dialect, "t1", { tuples, attributes }, 0);
    for (const s of writes) expect(within(s)).toBe(true);
    // one D1 batch: far below the statements a Worker invocation may send
    expect(writes.length).toBeLessThanOrEqual(10);
  });
});
