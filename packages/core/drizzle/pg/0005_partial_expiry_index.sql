DROP INDEX "attributes_expires_idx";--> statement-breakpoint
DROP INDEX "tuples_expires_idx";--> statement-breakpoint
CREATE INDEX "attributes_expires_idx" ON "attributes" USING btree ("tenant_id","expires_at") WHERE "attributes"."expires_at" is not null;--> statement-breakpoint
CREATE INDEX "tuples_expires_idx" ON "tuples" USING btree ("tenant_id","expires_at") WHERE "tuples"."expires_at" is not null;