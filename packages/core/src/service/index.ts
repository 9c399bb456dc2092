export { renderBundleTemplate } from "./bundle-template.ts";
export { inTurnsParser, type SchemaParser } from "./parse-worker/schema-parser.ts";
export {
  PembaService,
  SCHEMA_WRITES,
  type SchemaDiffAnswer,
  type SchemaDiffRequest,
  type SchemaList,
  type SchemaPartials,
  type SchemaWrites,
  type ServiceOptions,
} from "./pemba-service.ts";
export {
  DEFAULT_DIFF_SAMPLE,
  type DecisionFlip,
  DIFF_SAMPLE_SEED,
  type DiffOptions,
  measureSchemaDiff,
  orphanedRows,
  orphanList,
  type PermissionImpact,
  type RemovalImpact,
  removalName,
  type SchemaDiffReport,
  structuralReport,
  type TypeChangeImpact,
} from "./schema-diff.ts";
export { MAX_SCHEMA_BYTES, MAX_SCHEMA_RULE_CHARS } from "./schema-limits.ts";
export { DEFAULT_MAX_COMPILED_SCHEMA_BYTES, type ResolvedSchema, SchemaRegistry } from "./schema-registry.ts";
export { SchemaVersionGenerator } from "./schema-version.ts";
export { decodeSnapToken, encodeSnapToken } from "./snap-token.ts";
export type { PermissionMetadata, ServiceTarget } from "./target.ts";
export { DEFAULT_MAX_WATCH_STREAMS, type WatchBatch, WatchHub, type WatchOptions } from "./watch.ts";
