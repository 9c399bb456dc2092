export { compileSchema } from "./compile-schema.ts";
export type { CompiledEntity, CompiledSchema, MemberKind } from "./compiled-schema.ts";
export { dependencyClosure, type ReverseGraph } from "./reverse-graph.ts";
export {
  FAILED,
  FALSE,
  type MemberEvaluator,
  type MemberRef,
  PENDING,
  type ReadRef,
  TRUE,
  type Walk,
  type WalkResult,
} from "./walk.ts";
