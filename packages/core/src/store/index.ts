export { LibsqlStore, type LibsqlStoreOptions } from "./libsql.ts";
export { DEFAULT_TENANT, MemoryStore } from "./memory.ts";
export {
  DEFAULT_DATABASE,
  driverFor,
  migrate,
  type OpenStoreOptions,
  openStore,
  type StoreDriver,
} from "./open.ts";
export { PostgresStore, type PostgresStoreOptions } from "./postgres.ts";
export {
  DEFAULT_REPLICA_MAX_ROWS,
  DEFAULT_REPLICA_REFRESH_MS,
  type ReplicaLogger,
  type ReplicaOptions,
  type ReplicaStats,
  ReplicaStore,
} from "./replica.ts";
export type { QueryObserver } from "./sql/executor.ts";
export { SqliteStore, type SqliteStoreOptions, sqlitePath } from "./sqlite.ts";
export * from "./store.ts";
