/** fast-check arbitraries of engine queries, filters and write items, for property tests of the SQL plans. */
import fc from "fast-check";
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../../model.ts";
import type { AttributeQuery, SubjectTupleQuery, TupleQuery, WriteRequest } from "../types.ts";

const id = fc.string({ minLength: 1, maxLength: 12 });
const ids = (max: number) => fc.array(id, { minLength: 1, maxLength: max });
/** Few, some or many ids: key lists on both sides of the bound-VALUES limit. */
const some = (max: number) => fc.oneof(ids(3), ids(20), ids(max));
const optionalIds = fc.option(some(400), { nil: undefined });
const optionalId = fc.option(id, { nil: undefined });

export const tupleQuery: fc.Arbitrary<TupleQuery> = fc.record({
  entityType: id,
  entityIds: some(400),
  relations: fc.array(id, { minLength: 1, maxLength: 4 }),
});
export const subjectQuery: fc.Arbitrary<SubjectTupleQuery> = fc.record({
  entityType: id,
  relations: fc.array(id, { minLength: 1, maxLength: 4 }),
  subjectType: id,
  subjectIds: some(400),
  subjectRelation: fc.oneof(fc.constant(""), id),
});
export const attributeQuery: fc.Arbitrary<AttributeQuery> = fc.oneof(
  fc.record({
    entityType: id,
    entityIds: some(400),
    attributes: fc.array(id, { minLength: 1, maxLength: 4 }),
  }),
  fc.record({ entityType: id, attributes: fc.array(id, { minLength: 1, maxLength: 30 }) }),
);
/** One walk level's batch: 1 to 6 queries. */
export const queries = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T[]> =>
  fc.array(a, { minLength: 1, maxLength: 6 });

export const tuple: fc.Arbitrary<Tuple> = fc.record({
  entity: fc.record({ type: id, id }),
  relation: id,
  subject: fc.record({ type: id, id, relation: fc.oneof(fc.constant(""), id) }),
});
export const attribute: fc.Arbitrary<Attribute> = fc.record({
  entity: fc.record({ type: id, id }),
  attribute: id,
  value: fc.record({ type: fc.constant("ATTRIBUTE_TYPE_BOOLEAN" as const), data: fc.boolean() }),
});
export const tupleFilter: fc.Arbitrary<TupleFilter> = fc.record({
  entity: fc.record({ type: optionalId, ids: optionalIds }),
  relation: optionalId,
  subject: fc.record({ type: optionalId, ids: optionalIds, relation: optionalId }),
});
export const attributeFilter: fc.Arbitrary<AttributeFilter> = fc.record({
  entity: fc.record({ type: optionalId, ids: optionalIds }),
  attributes: optionalIds,
});

/** A write with every part: inserts, upserts, deletes by key (the first `maxDeletes` written) and by filter. */
export const writeRequest = (
  maxTuples: number,
  maxAttributes: number,
  maxDeletes: number,
): fc.Arbitrary<WriteRequest> =>
  fc
    .tuple(
      fc.array(tuple, { maxLength: maxTuples }),
      fc.array(attribute, { maxLength: maxAttributes }),
      tupleFilter,
      attributeFilter,
    )
    .map(([tuples, attributes, tf, af]) => ({
      tuples,
      attributes,
      deleteTuples: tuples.slice(0, maxDeletes),
      deleteTupleFilters: [tf],
      deleteAttributes: attributes.slice(0, maxDeletes),
      deleteAttributeFilters: [af],
    }));
