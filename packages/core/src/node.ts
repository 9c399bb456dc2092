/**
 * @pemba/core/node: what needs Node (node:fs, native or TCP drivers): the embedded SQLite driver
 * (better-sqlite3), PostgreSQL (pg), opening a store from a database URL, migrations read from disk, and the schema
 * parser on a worker thread.
 */

export { SchemaParseWorker } from "./service/parse-worker/schema-parse-worker.ts";
export { PostgresStore, type PostgresStoreOptions } from "./store/drivers/postgres.ts";
export { SqliteStore, type SqliteStoreOptions, sqlitePath } from "./store/drivers/sqlite.ts";
export {
  driverFor,
  migrate,
  type OpenStoreOptions,
  openStore,
  type StoreDriver,
} from "./store/open.ts";
export { schemaFiles } from "./validation/schema-files.ts";
