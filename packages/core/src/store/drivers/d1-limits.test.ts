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
});
