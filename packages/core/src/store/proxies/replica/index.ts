/**
 * The working-set replica in front of a SQL store (README.md): working-set.ts holds the keys the engine read within
 * a byte budget, freshness.ts keeps them exact through the change feed, routing.ts answers from them, preload.ts
 * (an option) fills them with whole tenants in the background.
 */
export type {
  ReplicaLogger,
  ReplicaSource,
} from "./freshness.ts";
export type { PreloadEnd, PreloadKeys, PreloadProgress, PreloadTypeKeys } from "./preload.ts";
export {
  type BackgroundWork,
  DEFAULT_REPLICA_MEMORY_BYTES,
  DEFAULT_REPLICA_REFRESH_MS,
  type LazyReplicaOptions,
  type ReplicaOptions,
  type ReplicaStats,
  ReplicaStore,
} from "./routing.ts";
export { WorkingSetBudget } from "./working-set.ts";
