/** PostgreSQL tables (drizzle pg-core); drizzle-kit generates packages/core/drizzle/pg from this file. */
import { isNotNull, isNull } from "drizzle-orm";
import {
  bigint,
  bigserial,
  customType,
  index,
  pgSequence,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
} from "drizzle-orm/pg-core";

const ms = (name: string) => bigint(name, { mode: "number" });

/**
 * Text compared byte by byte (`COLLATE "C"`), for every column an index keys on: the same order as SQLite's and
 * JavaScript's whatever the server's locale, and memcmp instead of the locale's strcoll on each index comparison
 * (a 1,000-row write's index inserts).
 */
const key = customType<{ data: string }>({ dataType: () => 'text COLLATE "C"' });

/**
 * Store-wide counters: "gc_horizon" (snaps below it are expired); "tx" is SQLite's transaction counter, unused here
 * (PostgreSQL takes transaction ids from `txIds`).
 */
export const meta = pgTable("pemba_meta", {
  key: text().primaryKey(),
  value: bigint({ mode: "number" }).notNull(),
});

/**
 * PostgreSQL's transaction ids: a write takes the next one while it holds its tenant's row lock (`tenants.head_tx`),
 * so the ids of one tenant commit in order while writes of different tenants run concurrently.
 */
export const txIds = pgSequence("pemba_tx_ids");

export const tenants = pgTable("tenants", {
  id: key().primaryKey(),
  name: text().notNull(),
  createdAt: ms("created_at").notNull(),
  /** PostgreSQL: the id of the tenant's last committed write (its head snap, with the GC horizon); SQLite: 0. */
  headTx: bigint("head_tx", { mode: "number" }).notNull().default(0),
});

export const transactions = pgTable(
  "transactions",
  {
    id: bigint({ mode: "number" }).primaryKey(),
    tenantId: key("tenant_id").notNull(),
    createdAt: ms("created_at").notNull(),
  },
  (t) => [
    index("transactions_tenant_idx").on(t.tenantId, t.id),
    index("transactions_created_idx").on(t.createdAt),
  ],
);

export const tuples = pgTable(
  "tuples",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    tenantId: key("tenant_id").notNull(),
    entityType: key("entity_type").notNull(),
    entityId: key("entity_id").notNull(),
    relation: key().notNull(),
    subjectType: key("subject_type").notNull(),
    subjectId: key("subject_id").notNull(),
    subjectRelation: key("subject_relation").notNull(),
    createdTx: bigint("created_tx", { mode: "number" }).notNull(),
    deletedTx: bigint("deleted_tx", { mode: "number" }),
    /** Pemba extension: ms since the epoch from which the row is absent from reads; NULL = never. */
    expiresAt: ms("expires_at"),
  },
  (t) => [
    index("tuples_entity_idx").on(t.tenantId, t.entityType, t.entityId, t.relation),
    index("tuples_subject_idx").on(
      t.tenantId,
      t.subjectType,
      t.subjectId,
      t.subjectRelation,
      t.entityType,
      t.relation,
    ),
    /** Relationships reads filtered by subject, paged in id order. */
    index("tuples_subject_page_idx").on(t.tenantId, t.subjectType, t.subjectId, t.id),
    uniqueIndex("tuples_live_unique")
      .on(t.tenantId, t.entityType, t.entityId, t.relation, t.subjectType, t.subjectId, t.subjectRelation)
      .where(isNull(t.deletedTx)),
    index("tuples_created_idx").on(t.tenantId, t.createdTx),
    /** Only deleted rows (the change feed, GC): an insert costs it no entry. */
    index("tuples_deleted_idx").on(t.tenantId, t.deletedTx).where(isNotNull(t.deletedTx)),
    /** Only expiring rows (the sweep and nextExpiry): a row without expiry costs its write no entry. */
    index("tuples_expires_idx").on(t.tenantId, t.expiresAt).where(isNotNull(t.expiresAt)),
  ],
);

export const attributes = pgTable(
  "attributes",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    tenantId: key("tenant_id").notNull(),
    entityType: key("entity_type").notNull(),
    entityId: key("entity_id").notNull(),
    attribute: key().notNull(),
    valueType: text("value_type").notNull(),
    /** JSON of the value's data; `valueType` keeps integer vs double. */
    value: text().notNull(),
    createdTx: bigint("created_tx", { mode: "number" }).notNull(),
    deletedTx: bigint("deleted_tx", { mode: "number" }),
    /** Pemba extension: ms since the epoch from which the row is absent from reads; NULL = never. */
    expiresAt: ms("expires_at"),
  },
  (t) => [
    index("attributes_entity_idx").on(t.tenantId, t.entityType, t.entityId, t.attribute),
    uniqueIndex("attributes_live_unique")
      .on(t.tenantId, t.entityType, t.entityId, t.attribute)
      .where(isNull(t.deletedTx)),
    index("attributes_created_idx").on(t.tenantId, t.createdTx),
    index("attributes_deleted_idx").on(t.tenantId, t.deletedTx).where(isNotNull(t.deletedTx)),
    index("attributes_expires_idx").on(t.tenantId, t.expiresAt).where(isNotNull(t.expiresAt)),
  ],
);

export const schemas = pgTable(
  "schemas",
  {
    seq: bigserial({ mode: "number" }).primaryKey(),
    tenantId: key("tenant_id").notNull(),
    version: key().notNull(),
    schema: text().notNull(),
    createdAt: ms("created_at").notNull(),
  },
  (t) => [uniqueIndex("schemas_version_unique").on(t.tenantId, t.version)],
);

export const bundles = pgTable(
  "bundles",
  {
    tenantId: key("tenant_id").notNull(),
    name: key().notNull(),
    /** JSON of the DataBundle. */
    payload: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.name] })],
);
