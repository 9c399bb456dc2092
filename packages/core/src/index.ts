/**
 * @pemba/core, runtime-neutral: the schema language, compiler, engine, rules, the service and HTTP app, and the
 * stores that need no Node built-in (memory, libSQL over HTTP, D1, the replica). Runs in Node, workerd and
 * browsers; a test bundles it with no Node built-in available (test/package-surface.test.ts).
 * File and PostgreSQL drivers and migrations from disk are in `@pemba/core/node`; test harnesses in
 * `@pemba/core/testing` (runtime-neutral) and `@pemba/core/testing/node`.
 */
export * as authzen from "./authzen/index.ts";
export * from "./compile/index.ts";
export { createPemba, type Pemba, type PembaRuntime } from "./create-pemba.ts";
export * from "./dump/index.ts";
export * from "./engine/index.ts";
export * from "./errors.ts";
export * from "./grpc/index.ts";
export * from "./http/index.ts";
/** The zod wire schemas: the one definition of a valid request and of each response (the SDK's types come from them). */
export * as wireCommon from "./http/wire/common.ts";
export * as wireData from "./http/wire/data.ts";
export * as wirePermission from "./http/wire/permission.ts";
export * as wireSchema from "./http/wire/schema.ts";
export * from "./model.ts";
export * from "./observe/index.ts";
export { seededRandom } from "./random.ts";
export * from "./rules/index.ts";
export * from "./schema/index.ts";
export * from "./service/index.ts";
export { type DecodedSnapToken, decodeSnapTokenWithBookmark } from "./service/snap-token.ts";
export * from "./settings/index.ts";
export { D1Sessions, D1Store, type D1StoreOptions } from "./store/drivers/d1.ts";
export type {
  D1Database,
  D1DatabaseSession,
  D1PreparedStatement,
  D1Result,
} from "./store/drivers/d1-binding.ts";
export { D1_LIMITS } from "./store/drivers/d1-binding.ts";
export { LibsqlStore, type LibsqlStoreOptions } from "./store/drivers/libsql.ts";
export { DEFAULT_TENANT, MemoryStore, type MemoryStoreOptions } from "./store/memory/memory-store.ts";
export { ForwardingStore } from "./store/proxies/forwarding.ts";
export {
  DEFAULT_LIBSQL_REPLICA_WAIT_MS,
  type ReadReplicaOptions,
  type ReadReplicaStats,
  ReadReplicaStore,
} from "./store/proxies/read-replicas/read-replica-store.ts";
export {
  type BackgroundWork,
  DEFAULT_REPLICA_MEMORY_BYTES,
  DEFAULT_REPLICA_REFRESH_MS,
  type LazyReplicaOptions,
  type ReplicaLogger,
  type ReplicaOptions,
  type ReplicaStats,
  ReplicaStore,
  WorkingSetBudget,
} from "./store/proxies/replica/index.ts";
export {
  type PlacementOptions,
  placementScore,
  rendezvous,
  TenantPlacement,
} from "./store/proxies/shards/placement.ts";
export { type Shard, ShardedStore, type ShardedStoreOptions } from "./store/proxies/shards/sharded-store.ts";
export type { QueryObserver } from "./store/sql/executor.ts";
export * from "./store/store.ts";
export * from "./validation/index.ts";
