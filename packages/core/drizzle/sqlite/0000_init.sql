CREATE TABLE `attributes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`entity_type` text NOT NULL,
	`entity_id` text NOT NULL,
	`attribute` text NOT NULL,
	`value_type` text NOT NULL,
	`value` text NOT NULL,
	`created_tx` integer NOT NULL,
	`deleted_tx` integer
);
--> statement-breakpoint
CREATE INDEX `attributes_entity_idx` ON `attributes` (`tenant_id`,`entity_type`,`entity_id`,`attribute`);--> statement-breakpoint
CREATE UNIQUE INDEX `attributes_live_unique` ON `attributes` (`tenant_id`,`entity_type`,`entity_id`,`attribute`) WHERE "attributes"."deleted_tx" is null;--> statement-breakpoint
CREATE INDEX `attributes_created_idx` ON `attributes` (`tenant_id`,`created_tx`);--> statement-breakpoint
CREATE INDEX `attributes_deleted_idx` ON `attributes` (`tenant_id`,`deleted_tx`);--> statement-breakpoint
CREATE TABLE `bundles` (
	`tenant_id` text NOT NULL,
	`name` text NOT NULL,
	`payload` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `name`)
);
--> statement-breakpoint
CREATE TABLE `pemba_meta` (
	`key` text PRIMARY KEY NOT NULL,
	`value` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `schemas` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`version` text NOT NULL,
	`schema` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `schemas_version_unique` ON `schemas` (`tenant_id`,`version`);--> statement-breakpoint
CREATE TABLE `tenants` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `transactions` (
	`id` integer PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `transactions_tenant_idx` ON `transactions` (`tenant_id`,`id`);--> statement-breakpoint
CREATE INDEX `transactions_created_idx` ON `transactions` (`created_at`);--> statement-breakpoint
CREATE TABLE `tuples` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`entity_type` text NOT NULL,
	`entity_id` text NOT NULL,
	`relation` text NOT NULL,
	`subject_type` text NOT NULL,
	`subject_id` text NOT NULL,
	`subject_relation` text NOT NULL,
	`created_tx` integer NOT NULL,
	`deleted_tx` integer
);
--> statement-breakpoint
CREATE INDEX `tuples_entity_idx` ON `tuples` (`tenant_id`,`entity_type`,`entity_id`,`relation`);--> statement-breakpoint
CREATE INDEX `tuples_subject_idx` ON `tuples` (`tenant_id`,`subject_type`,`subject_id`,`subject_relation`,`entity_type`,`relation`);--> statement-breakpoint
CREATE UNIQUE INDEX `tuples_live_unique` ON `tuples` (`tenant_id`,`entity_type`,`entity_id`,`relation`,`subject_type`,`subject_id`,`subject_relation`) WHERE "tuples"."deleted_tx" is null;--> statement-breakpoint
CREATE INDEX `tuples_created_idx` ON `tuples` (`tenant_id`,`created_tx`);--> statement-breakpoint
CREATE INDEX `tuples_deleted_idx` ON `tuples` (`tenant_id`,`deleted_tx`);