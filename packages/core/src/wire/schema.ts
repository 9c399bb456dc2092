/** Schema, tenancy and bundle service requests/responses. */
import { z } from "@hono/zod-openapi";
import { plainString, protoMessage, repeated, uint32 } from "./pgv.ts";

export const SchemaWriteRequestSchema = protoMessage("SchemaWriteRequest", {
  schema: plainString(),
});

export const SchemaWriteResponseSchema = z
  .object({ schema_version: z.string() })
  .openapi("SchemaWriteResponse", { example: { schema_version: "cn3u0b9t3kdt9bk4q3ag" } });

export const SchemaPartialWriteRequestSchema = protoMessage("SchemaPartialWriteRequest", {
  metadata: protoMessage("SchemaPartialWriteRequestMetadata", { schema_version: plainString() }),
  partials: z
    .record(
      z.string(),
      protoMessage("Partials", {
        write: repeated(z.string()),
        update: repeated(z.string()),
        delete: repeated(z.string()),
      }),
    )
    .prefault({}),
});

export const SchemaReadRequestSchema = protoMessage("SchemaReadRequest", {
  metadata: protoMessage("SchemaReadRequestMetadata", { schema_version: plainString() }),
});

export const SchemaReadResponseSchema = z
  .object({
    schema: z.object({
      entity_definitions: z.record(z.string(), z.unknown()),
      rule_definitions: z.record(z.string(), z.unknown()),
      references: z.record(z.string(), z.string()),
    }),
  })
  .openapi("SchemaReadResponse");

export const SchemaListRequestSchema = protoMessage("SchemaListRequest", {
  page_size: uint32(),
  continuous_token: plainString(),
});

export const SchemaListResponseSchema = z
  .object({
    head: z.string(),
    schemas: z.array(z.object({ version: z.string(), created_at: z.string() })),
    continuous_token: z.string(),
  })
  .openapi("SchemaListResponse");

export const TenantCreateRequestSchema = protoMessage("TenantCreateRequest", {
  id: z
    .string({ error: "value must be a string" })
    .max(64, { error: "value length must be at most 64 bytes" })
    .regex(/[a-zA-Z0-9-,]+/, { error: 'value does not match regex pattern "[a-zA-Z0-9-,]+"' })
    .prefault(""),
  name: plainString(),
});

const TenantSchema = z
  .object({ id: z.string(), name: z.string(), created_at: z.string() })
  .openapi("Tenant", { example: { id: "t1", name: "example tenant", created_at: "2026-11-22T10:25:49Z" } });

export const TenantCreateResponseSchema = z.object({ tenant: TenantSchema }).openapi("TenantCreateResponse");

export const TenantListRequestSchema = protoMessage("TenantListRequest", {
  page_size: uint32(),
  continuous_token: plainString(),
});

export const TenantListResponseSchema = z
  .object({ tenants: z.array(TenantSchema), continuous_token: z.string() })
  .openapi("TenantListResponse");

export const TenantDeleteResponseSchema = z.object({ tenant_id: z.string() }).openapi("TenantDeleteResponse");

export const DataBundleSchema = protoMessage("DataBundle", {
  name: plainString(),
  arguments: repeated(z.string()),
  operations: repeated(
    protoMessage("Operation", {
      relationships_write: repeated(z.string()),
      relationships_delete: repeated(z.string()),
      attributes_write: repeated(z.string()),
      attributes_delete: repeated(z.string()),
    }),
  ),
});

export const BundleWriteRequestSchema = protoMessage("BundleWriteRequest", {
  bundles: repeated(DataBundleSchema),
});

export const BundleWriteResponseSchema = z
  .object({ names: z.array(z.string()) })
  .openapi("BundleWriteResponse");

export const BundleReadRequestSchema = protoMessage("BundleReadRequest", { name: plainString() });
export const BundleReadResponseSchema = z.object({ bundle: DataBundleSchema }).openapi("BundleReadResponse");
export const BundleDeleteRequestSchema = protoMessage("BundleDeleteRequest", { name: plainString() });
export const BundleDeleteResponseSchema = z.object({ name: z.string() }).openapi("BundleDeleteResponse");

export const WatchRequestSchema = protoMessage("WatchRequest", { snap_token: plainString() });
export const WatchResponseSchema = z
  .object({
    changes: z.object({
      snap_token: z.string(),
      data_changes: z.array(
        z.object({
          operation: z.enum(["OPERATION_CREATE", "OPERATION_DELETE"]),
          tuple: z.unknown().optional(),
          attribute: z.unknown().optional(),
        }),
      ),
    }),
  })
  .openapi("WatchResponse");

/** Pairs a schema diff may ask per permission (bounded work per request). */
export const MAX_DIFF_SAMPLE = 100_000;

export const SchemaDiffRequestSchema = protoMessage("SchemaDiffRequest", {
  metadata: protoMessage("SchemaDiffRequestMetadata", {
    schema_version: plainString(),
    snap_token: plainString(),
  }).prefault({}),
  base_schema: plainString(),
  schema: plainString().pipe(z.string().min(1, { error: "value length must be at least 1 bytes" })),
  sample_size: uint32().pipe(
    z.number().lte(MAX_DIFF_SAMPLE, { error: `value must be less than or equal to ${MAX_DIFF_SAMPLE}` }),
  ),
});

const CheckResultSchema = z.enum(["CHECK_RESULT_ALLOWED", "CHECK_RESULT_DENIED"]);
const WireEntity = z.object({ type: z.string(), id: z.string() });

export const SchemaDiffResponseSchema = z
  .object({
    base_version: z.string(),
    snap_token: z.string(),
    measured: z.boolean(),
    orphaned_rows: z.number(),
    sample: z.object({
      size: z.number(),
      seed: z.number(),
      /** Pairs the diff may ask over all its permissions (its work budget per request). */
      pair_budget: z.number(),
      /** True when the budget made a permission's sample smaller than `size` (`sampled` says which). */
      limited_by_budget: z.boolean(),
    }),
    removed: z.array(
      z.object({
        kind: z.enum(["ENTITY", "RELATION", "PERMISSION", "ATTRIBUTE", "RELATION_SUBJECT"]),
        entity: z.string(),
        name: z.string(),
        subject: z.string().optional(),
        tuples: z.number().optional(),
        attributes: z.number().optional(),
      }),
    ),
    added: z.array(
      z.object({
        kind: z.enum(["ENTITY", "RELATION", "PERMISSION", "ATTRIBUTE"]),
        entity: z.string(),
        name: z.string(),
      }),
    ),
    attribute_type_changes: z.array(
      z.object({
        entity: z.string(),
        attribute: z.string(),
        from: z.string(),
        to: z.string(),
        values: z.number().optional(),
        mismatched: z.number().optional(),
      }),
    ),
    permissions: z.array(
      z.object({
        entity: z.string(),
        permission: z.string(),
        subject_types: z.array(z.string()),
        pairs: z.number().optional(),
        checked: z.number().optional(),
        sampled: z.boolean().optional(),
        allowed_to_denied: z.number().optional(),
        denied_to_allowed: z.number().optional(),
        examples: z
          .array(
            z.object({
              entity: WireEntity,
              subject: z.object({ type: z.string(), id: z.string(), relation: z.string() }),
              from: CheckResultSchema,
              to: CheckResultSchema,
            }),
          )
          .optional(),
      }),
    ),
    unchanged_permissions: z.number(),
  })
  .openapi("SchemaDiffResponse");

export type SchemaDiffResponse = z.infer<typeof SchemaDiffResponseSchema>;
