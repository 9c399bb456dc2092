/** SQLite/libSQL tables (drizzle sqlite-core); drizzle-kit generates packages/core/drizzle/sqlite from this file. */
import { isNotNull, isNull } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Indexes the read plans pin with INDEXED BY (SQLite's planner has no statistics without ANALYZE). */
export const INDEXES = {
  tuplesEntity: "tuples_entity_idx",
  tuplesSubject: "tuples_subject_idx",
  attributesEntity: "attributes_entity_idx",
} as const;

/** Store-wide counters: "tx" (the last transaction id) and "gc_horizon" (snaps below it are expired). */
export const meta = sqliteTable("pemba_meta", {
  key: text().primaryKey(),
  value: integer().notNull(),
});

export const tenants = sqliteTable("tenants", {
  id: text().primaryKey(),
  name: text().notNull(),
  createdAt: integer("created_at").notNull(),
  /** PostgreSQL's per-tenant head (pg-tables.ts); SQLite has one writer and the store-wide "tx" counter: 0. */
  headTx: integer("head_tx").notNull().default(0),
});

export const transactions = sqliteTable(
  "transactions",
  {
    id: integer().primaryKey(),
    tenantId: text("tenant_id").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    index("transactions_tenant_idx").on(t.tenantId, t.id),
    index("transactions_created_idx").on(t.createdAt),
  ],
);

export const tuples = sqliteTable(
  "tuples",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text("tenant_id").notNull(),
    entityType: text("entity_type").notNull(),
    entityId: text("entity_id").notNull(),
    relation: text().notNull(),
    subjectType: text("subject_type").notNull(),
    subjectId: text("subject_id").notNull(),
    subjectRelation: text("subject_relation").notNull(),
    createdTx: integer("created_tx").notNull(),
    deletedTx: integer("deleted_tx"),
    /** Pemba extension: ms since the epoch from which the row is absent from reads; NULL = never. */
    expiresAt: integer("expires_at"),
  },
  (t) => [
    index(INDEXES.tuplesEntity).on(t.tenantId, t.entityType, t.entityId, t.relation),
    index(INDEXES.tuplesSubject).on(
      t.tenantId,
      t.subjectType,
      t.subjectId,
      t.subjectRelation,
      t.entityType,
      t.relation,
    ),
    uniqueIndex("tuples_live_unique")
      .on(t.tenantId, t.entityType, t.entityId, t.relation, t.subjectType, t.subjectId, t.subjectRelation)
      .where(isNull(t.deletedTx)),
    index("tuples_created_idx").on(t.tenantId, t.createdTx),
    index("tuples_deleted_idx").on(t.tenantId, t.deletedTx),
    /** Only expiring rows (the sweep and nextExpiry): a row without expiry costs its write no entry. */
    index("tuples_expires_idx").on(t.tenantId, t.expiresAt).where(isNotNull(t.expiresAt)),
  ],
);

export const attributes = sqliteTable(
  "attributes",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text("tenant_id").notNull(),
    entityType: text("entity_type").notNull(),
    entityId: text("entity_id").notNull(),
    attribute: text().notNull(),
    valueType: text("value_type").notNull(),
    /** JSON of the value's data; `valueType` keeps integer vs double. */
    value: text().notNull(),
    createdTx: integer("created_tx").notNull(),
    deletedTx: integer("deleted_tx"),
    /** Pemba extension: ms since the epoch from which the row is absent from reads; NULL = never. */
    expiresAt: integer("expires_at"),
  },
  (t) => [
    index(INDEXES.attributesEntity).on(t.tenantId, t.entityType, t.entityId, t.attribute),
    uniqueIndex("attributes_live_unique")
      .on(t.tenantId, t.entityType, t.entityId, t.attribute)
      .where(isNull(t.deletedTx)),
    index("attributes_created_idx").on(t.tenantId, t.createdTx),
    index("attributes_deleted_idx").on(t.tenantId, t.deletedTx),
    index("attributes_expires_idx").on(t.tenantId, t.expiresAt).where(isNotNull(t.expiresAt)),
  ],
);

export const schemas = sqliteTable(
  "schemas",
  {
    seq: integer().primaryKey({ autoIncrement: true }),
    tenantId: text("tenant_id").notNull(),
    version: text().notNull(),
    schema: text().notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("schemas_version_unique").on(t.tenantId, t.version)],
);

export const bundles = sqliteTable(
  "bundles",
  {
    tenantId: text("tenant_id").notNull(),
    name: text().notNull(),
    /** JSON of the DataBundle. */
    payload: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.name] })],
);
