ALTER TABLE `attributes` ADD `expires_at` integer;--> statement-breakpoint
CREATE INDEX `attributes_expires_idx` ON `attributes` (`tenant_id`,`expires_at`);--> statement-breakpoint
ALTER TABLE `tuples` ADD `expires_at` integer;--> statement-breakpoint
CREATE INDEX `tuples_expires_idx` ON `tuples` (`tenant_id`,`expires_at`);