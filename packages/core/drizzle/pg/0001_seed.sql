INSERT INTO "pemba_meta" ("key", "value") VALUES ('tx', 0), ('gc_horizon', 0);--> statement-breakpoint
INSERT INTO "tenants" ("id", "name", "created_at") VALUES ('t1', 'example tenant', (extract(epoch from now()) * 1000)::bigint);
