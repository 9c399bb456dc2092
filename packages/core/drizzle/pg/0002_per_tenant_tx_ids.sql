CREATE SEQUENCE "public"."pemba_tx_ids" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "head_tx" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
-- the next id follows the last one the store-wide counter gave, and every tenant's head is that counter
SELECT setval('pemba_tx_ids', GREATEST("value", 1), "value" > 0) FROM "pemba_meta" WHERE "key" = 'tx';--> statement-breakpoint
UPDATE "tenants" SET "head_tx" = (SELECT "value" FROM "pemba_meta" WHERE "key" = 'tx');
