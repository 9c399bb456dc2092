/** The in-memory replica in front of a SQL store: load.ts keeps the copy, routing.ts answers from it. */
export {
  type BackgroundLoads,
  CopyBudget,
  DEFAULT_REPLICA_MAX_ROWS,
  DEFAULT_REPLICA_REFRESH_MS,
  type LazyReplicaOptions,
  type ReplicaLogger,
  type ReplicaOptions,
  type ReplicaSource,
} from "./load.ts";
export { type ReplicaStats, ReplicaStore } from "./routing.ts";
