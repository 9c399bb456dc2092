-- Key columns compared byte by byte (COLLATE "C"); one ALTER per table, so each index is rebuilt once.
DROP INDEX "attributes_deleted_idx";--> statement-breakpoint
DROP INDEX "tuples_deleted_idx";--> statement-breakpoint
ALTER TABLE "attributes" ALTER COLUMN "tenant_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "entity_type" SET DATA TYPE text COLLATE "C", ALTER COLUMN "entity_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "attribute" SET DATA TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "bundles" ALTER COLUMN "tenant_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "name" SET DATA TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "schemas" ALTER COLUMN "tenant_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "version" SET DATA TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "tenants" ALTER COLUMN "id" SET DATA TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "transactions" ALTER COLUMN "tenant_id" SET DATA TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "tuples" ALTER COLUMN "tenant_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "entity_type" SET DATA TYPE text COLLATE "C", ALTER COLUMN "entity_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "relation" SET DATA TYPE text COLLATE "C", ALTER COLUMN "subject_type" SET DATA TYPE text COLLATE "C", ALTER COLUMN "subject_id" SET DATA TYPE text COLLATE "C", ALTER COLUMN "subject_relation" SET DATA TYPE text COLLATE "C";--> statement-breakpoint
CREATE INDEX "attributes_deleted_idx" ON "attributes" USING btree ("tenant_id","deleted_tx") WHERE "attributes"."deleted_tx" is not null;--> statement-breakpoint
CREATE INDEX "tuples_deleted_idx" ON "tuples" USING btree ("tenant_id","deleted_tx") WHERE "tuples"."deleted_tx" is not null;
