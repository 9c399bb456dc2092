export { bulkCheck, check, type Decided, decideAllOn, subjectPermission } from "./check.ts";
export { Evaluation } from "./evaluation/evaluation.ts";
export { EvaluationPool } from "./evaluation/pool.ts";
export { expand } from "./expand.ts";
export {
  type ExplainTarget,
  type Explanation,
  explain,
  type ProofKind,
  type ProofNode,
  type ProofTuple,
} from "./explain.ts";
export { formatExplain, proofLine } from "./explain-format.ts";
export { lookupEntity } from "./lookup-entity.ts";
export { decodeContinuousToken, encodeContinuousToken } from "./lookup-paging.ts";
export { lookupSubject } from "./lookup-subject.ts";
export type * from "./types.ts";
