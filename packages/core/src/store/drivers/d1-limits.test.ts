/**
 * Every statement the shared SQL store sends through d1Dialect stays within D1's per-statement limits (100 bound
 * parameters, 100 KB of SQL), for any batch of engine reads, filtered reads and writes (property test). The
 * combined level read (queryReadsStatement) may exceed them: SqlStore then sends its two halves, which stay within.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Attribute, Tuple } from "../../model.ts";
import type { Statement } from "../sql/executor.ts";
import {
  queryAttributesStatement,
  queryReadsStatement,
  querySubjectTuplesStatement,
  queryTuplesStatement,
  readAttributesStatement,
  readTuplesStatement,
} from "../sql/read-plan.ts";
import { planWrite } from "../sql/write-plan.ts";
import type { AttributeQuery, SubjectTupleQuery, TupleQuery } from "../store.ts";
import { d1Dialect } from "./d1.ts";
import { D1_LIMITS } from "./d1-binding.ts";

const utf8 = new TextEncoder();
const within = (s: Statement) =>
  s.params.length <= D1_LIMITS.maxParams && utf8.encode(s.sql).length <= D1_LIMITS.maxSqlBytes;

const id = fc.string({ minLength: 1, maxLength: 12 });
const ids = (max: number) => fc.array(id, { minLength: 1, maxLength: max });
const some = (max: number) => fc.oneof(ids(3), ids(20), ids(max));
const tupleQuery: fc.Arbitrary<TupleQuery> = fc.record({
  entityType: id,
  entityIds: some(400),
  relations: fc.array(id, { minLength: 1, maxLength: 4 }),
});
const subjectQuery: fc.Arbitrary<SubjectTupleQuery> = fc.record({
  entityType: id,
  relations: fc.array(id, { minLength: 1, maxLength: 4 }),
  subjectType: id,
  subjectIds: some(400),
  subjectRelation: fc.oneof(fc.constant(""), id),
});
const attributeQuery: fc.Arbitrary<AttributeQuery> = fc.oneof(
  fc.record({
    entityType: id,
    entityIds: some(400),
    attributes: fc.array(id, { minLength: 1, maxLength: 4 }),
  }),
  fc.record({ entityType: id, attributes: fc.array(id, { minLength: 1, maxLength: 30 }) }),
);
const queries = <T>(a: fc.Arbitrary<T>) => fc.array(a, { minLength: 1, maxLength: 6 });
const optionalIds = fc.option(some(400), { nil: undefined });
const optionalId = fc.option(id, { nil: undefined });
const tuple: fc.Arbitrary<Tuple> = fc.record({
  entity: fc.record({ type: id, id }),
  relation: id,
  subject: fc.record({ type: id, id, relation: fc.oneof(fc.constant(""), id) }),
});
const attribute: fc.Arbitrary<Attribute> = fc.record({
  entity: fc.record({ type: id, id }),
  attribute: id,
  value: fc.record({ type: fc.constant("ATTRIBUTE_TYPE_BOOLEAN" as const), data: fc.boolean() }),
});

describe("d1Dialect statements within D1's limits", () => {
  it("engine reads: tuples, subject tuples, attributes; the combined level read or its two halves", () => {
    fc.assert(
      fc.property(queries(tupleQuery), queries(subjectQuery), queries(attributeQuery), (t, s, a) => {
        expect(within(queryTuplesStatement(d1Dialect, "t1", 7, t))).toBe(true);
        expect(within(querySubjectTuplesStatement(d1Dialect, "t1", 7, s))).toBe(true);
        expect(within(queryAttributesStatement(d1Dialect, "t1", 7, a))).toBe(true);
        const combined = queryReadsStatement(d1Dialect, "t1", 7, t, a);
        if (combined.params.length > d1Dialect.maxParams) {
          expect(within(queryTuplesStatement(d1Dialect, "t1", 7, t))).toBe(true);
          expect(within(queryAttributesStatement(d1Dialect, "t1", 7, a))).toBe(true);
        } else {
          expect(within(combined)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("filtered reads and writes (deletes by key and by filter, inserts, attribute upserts)", () => {
    const tupleFilter = fc.record({
      entity: fc.record({ type: optionalId, ids: optionalIds }),
      relation: optionalId,
      subject: fc.record({ type: optionalId, ids: optionalIds, relation: optionalId }),
    });
    const attributeFilter = fc.record({
      entity: fc.record({ type: optionalId, ids: optionalIds }),
      attributes: optionalIds,
    });
    fc.assert(
      fc.property(
        tupleFilter,
        attributeFilter,
        fc.array(tuple, { maxLength: 1000 }),
        fc.array(attribute, { maxLength: 300 }),
        (tf, af, tuples, attributes) => {
          expect(within(readTuplesStatement(d1Dialect, "t1", 7, tf, 0, 101))).toBe(true);
          expect(within(readAttributesStatement(d1Dialect, "t1", 7, af, 0, 101))).toBe(true);
          const write = planWrite(
            d1Dialect,
            "t1",
            {
              tuples,
              attributes,
              deleteTuples: tuples.slice(0, 50),
              deleteTupleFilters: [tf],
              deleteAttributes: attributes.slice(0, 50),
              deleteAttributeFilters: [af],
            },
            0,
          );
          for (const s of write) expect(within(s)).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });
});
