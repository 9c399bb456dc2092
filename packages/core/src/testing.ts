/**
 * @pemba/core/testing, runtime-neutral test support (it also runs inside workerd): the one store contract suite,
 * the statements-per-request suite, fixtures, the load-test schema, the outage tests' API calls and load loops,
 * and how browser tests launch Debian's Chromium (a constant: no browser code here). Node-only harnesses (a
 * throwaway PostgreSQL server, the app over real HTTP) are in `@pemba/core/testing/node`.
 */

export { CHROMIUM_LAUNCH } from "./http/testing/chromium.ts";
/** Replays every hop of an explain proof against the store and the schema. */
export { verifyProof } from "./http/testing/explain-verify.ts";
export { celHeavySchema, entitiesSchema, letterName } from "./service/testing/limit-schemas.ts";
export {
  expectedView,
  LOAD_TEST_SCHEMA,
  loadTestData,
  VIEW_PAIRS,
} from "./service/testing/load-test-schema.ts";
export {
  type ReplicaPropertyCounts,
  type ReplicaPropertyOptions,
  replicaProperty,
} from "./service/testing/replica-property.ts";
export { describeStatementCounts, type Opener } from "./service/testing/statement-counts.ts";
export { describeStoreContract, type StoreHandle } from "./store/contract/index.ts";
/** SQL plans and dialects, for benchmarks that compare statement shapes (loadtest/bench-key-lists.ts). */
export { d1Dialect } from "./store/drivers/d1.ts";
/** The working set's parts, for weighing what its entries hold (loadtest/working-set-memory.ts). */
export { TenantKeys, WorkingSetBudget } from "./store/proxies/replica/working-set.ts";
export { sqliteDialect } from "./store/sql/dialect.ts";
export { queryTuplesStatement } from "./store/sql/read-plan.ts";
export { attr, keys, tuple } from "./store/testing/fixtures.ts";
export {
  type ApiAnswer,
  type ApiCall,
  allowedChecks,
  isUnavailable,
  type Load,
  type LoadLoop,
  readAllTuples,
  reasonOf,
  sleep,
  startLoad,
  tenantApi,
} from "./testing/api-load.ts";
