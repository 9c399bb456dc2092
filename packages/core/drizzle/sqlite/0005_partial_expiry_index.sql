DROP INDEX `attributes_expires_idx`;--> statement-breakpoint
CREATE INDEX `attributes_expires_idx` ON `attributes` (`tenant_id`,`expires_at`) WHERE "attributes"."expires_at" is not null;--> statement-breakpoint
DROP INDEX `tuples_expires_idx`;--> statement-breakpoint
CREATE INDEX `tuples_expires_idx` ON `tuples` (`tenant_id`,`expires_at`) WHERE "tuples"."expires_at" is not null;