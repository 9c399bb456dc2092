ALTER TABLE "attributes" ADD COLUMN "expires_at" bigint;--> statement-breakpoint
ALTER TABLE "tuples" ADD COLUMN "expires_at" bigint;--> statement-breakpoint
CREATE INDEX "attributes_expires_idx" ON "attributes" USING btree ("tenant_id","expires_at");--> statement-breakpoint
CREATE INDEX "tuples_expires_idx" ON "tuples" USING btree ("tenant_id","expires_at");