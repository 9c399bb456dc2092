export { bulkCheck, check, subjectPermission } from "./check.ts";
export { EvaluationPool } from "./evaluation/pool.ts";
export { Evaluation } from "./evaluation.ts";
export { expand } from "./expand.ts";
export { lookupEntity } from "./lookup-entity.ts";
export { decodeContinuousToken, encodeContinuousToken } from "./lookup-paging.ts";
export { lookupSubject } from "./lookup-subject.ts";
export type * from "./types.ts";
