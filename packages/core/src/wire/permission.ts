/** Permission service requests/responses (check, bulk check, expand, lookups, subject permission). */
import { z } from "@hono/zod-openapi";
import {
  ArgumentSchema,
  ContextSchema,
  EntitySchema,
  NAME_PATTERN,
  RelationReferenceSchema,
  SubjectSchema,
} from "./common.ts";
import {
  int32AtLeast,
  optionalMessage,
  patternString,
  plainString,
  protoMessage,
  repeated,
  uint32,
} from "./pgv.ts";

const CheckResultSchema = z.enum(["CHECK_RESULT_UNSPECIFIED", "CHECK_RESULT_ALLOWED", "CHECK_RESULT_DENIED"]);

const snapAndVersion = { schema_version: plainString(), snap_token: plainString() };

export const PermissionCheckRequestMetadataSchema = protoMessage("PermissionCheckRequestMetadata", {
  ...snapAndVersion,
  depth: int32AtLeast(3),
});

export const PermissionCheckRequestSchema = protoMessage("PermissionCheckRequest", {
  metadata: PermissionCheckRequestMetadataSchema,
  entity: EntitySchema,
  permission: patternString(NAME_PATTERN, 64),
  subject: SubjectSchema,
  context: optionalMessage(ContextSchema),
  arguments: repeated(ArgumentSchema),
});

export const PermissionCheckResponseSchema = z
  .object({ can: CheckResultSchema, metadata: z.object({ check_count: z.number().int() }) })
  .openapi("PermissionCheckResponse", {
    example: { can: "CHECK_RESULT_ALLOWED", metadata: { check_count: 3 } },
  });

export const PermissionBulkCheckRequestItemSchema = protoMessage("PermissionBulkCheckRequestItem", {
  entity: EntitySchema,
  permission: patternString(NAME_PATTERN, 64),
  subject: SubjectSchema,
});

export const permissionBulkCheckRequestSchema = (maxItems: number) =>
  protoMessage("PermissionBulkCheckRequest", {
    metadata: PermissionCheckRequestMetadataSchema,
    items: repeated(PermissionBulkCheckRequestItemSchema, 1, maxItems),
    context: optionalMessage(ContextSchema),
    arguments: repeated(ArgumentSchema),
  });

export const PermissionBulkCheckResponseSchema = z
  .object({ results: z.array(PermissionCheckResponseSchema) })
  .openapi("PermissionBulkCheckResponse");

export const PermissionExpandRequestSchema = protoMessage("PermissionExpandRequest", {
  metadata: protoMessage("PermissionExpandRequestMetadata", snapAndVersion),
  entity: EntitySchema,
  permission: patternString(NAME_PATTERN, 64, true),
  context: optionalMessage(ContextSchema),
  arguments: repeated(ArgumentSchema),
});

// Recursive in truth (children are Expand nodes); documented one level deep.
const ExpandSchema = z
  .object({
    entity: EntitySchema,
    permission: z.string(),
    arguments: z.array(ArgumentSchema),
    expand: z
      .object({
        operation: z.enum(["OPERATION_UNION", "OPERATION_INTERSECTION", "OPERATION_EXCLUSION"]),
        children: z.array(z.unknown().openapi({ description: "Expand node" })),
      })
      .optional(),
    leaf: z
      .object({
        subjects: z.object({ subjects: z.array(SubjectSchema) }).optional(),
        values: z.object({ values: z.record(z.string(), z.unknown()) }).optional(),
        value: z.unknown().optional(),
      })
      .optional(),
  })
  .openapi("Expand");

export const PermissionExpandResponseSchema = z
  .object({ tree: ExpandSchema })
  .openapi("PermissionExpandResponse");

export const PermissionLookupEntityRequestSchema = protoMessage("PermissionLookupEntityRequest", {
  metadata: protoMessage("PermissionLookupEntityRequestMetadata", {
    ...snapAndVersion,
    depth: int32AtLeast(3),
  }),
  entity_type: patternString(NAME_PATTERN, 64),
  permission: patternString(NAME_PATTERN, 64),
  subject: SubjectSchema,
  context: optionalMessage(ContextSchema),
  scope: z.record(z.string(), protoMessage("StringArrayValue", { data: repeated(z.string()) })).prefault({}),
  page_size: uint32(),
  continuous_token: plainString(),
});

export const PermissionLookupEntityResponseSchema = z
  .object({ entity_ids: z.array(z.string()), continuous_token: z.string() })
  .openapi("PermissionLookupEntityResponse");

export const PermissionLookupEntityStreamResponseSchema = z
  .object({ result: z.object({ entity_id: z.string(), continuous_token: z.string() }) })
  .openapi("PermissionLookupEntityStreamResponse");

export const PermissionLookupSubjectRequestSchema = protoMessage("PermissionLookupSubjectRequest", {
  metadata: protoMessage("PermissionLookupSubjectRequestMetadata", {
    ...snapAndVersion,
    depth: int32AtLeast(3),
  }),
  entity: EntitySchema,
  permission: patternString(NAME_PATTERN, 64),
  subject_reference: RelationReferenceSchema,
  context: optionalMessage(ContextSchema),
  arguments: repeated(ArgumentSchema),
  page_size: uint32(),
  continuous_token: plainString(),
});

export const PermissionLookupSubjectResponseSchema = z
  .object({ subject_ids: z.array(z.string()), continuous_token: z.string() })
  .openapi("PermissionLookupSubjectResponse");

export const PermissionSubjectPermissionRequestSchema = protoMessage("PermissionSubjectPermissionRequest", {
  metadata: protoMessage("PermissionSubjectPermissionRequestMetadata", {
    ...snapAndVersion,
    only_permission: z.boolean().prefault(false),
    depth: int32AtLeast(3),
  }),
  entity: EntitySchema,
  subject: SubjectSchema,
  context: optionalMessage(ContextSchema),
});

export const PermissionSubjectPermissionResponseSchema = z
  .object({ results: z.record(z.string(), CheckResultSchema) })
  .openapi("PermissionSubjectPermissionResponse");

/**
 * Pemba's explain (an extension; Permify has no such endpoint): the request is exactly the check request, the
 * answer the check answer plus its proof. Proof nodes are recursive in truth; documented one level deep.
 */
export const PermissionExplainRequestSchema = PermissionCheckRequestSchema;

const ProofValueSchema = z.object({ "@type": z.string(), data: z.unknown() });

export const ProofNodeSchema = z
  .object({
    kind: z.enum([
      "permission",
      "relation",
      "attribute",
      "rule",
      "tuple_to_userset",
      "union",
      "intersection",
      "exclusion",
      "direct",
      "cycle",
      "cut",
    ]),
    entity: EntitySchema,
    name: z.string(),
    result: z.enum(["ALLOWED", "DENIED"]),
    tuple: z.object({ entity: EntitySchema, relation: z.string(), subject: SubjectSchema }).optional(),
    attribute: z.object({ entity: EntitySchema, attribute: z.string(), value: ProofValueSchema }).optional(),
    rule: z
      .object({
        name: z.string(),
        expression: z.string(),
        arguments: z.record(z.string(), ProofValueSchema),
      })
      .optional(),
    reason: z.string().optional(),
    contextual: z.boolean().optional(),
    omitted: z.number().int().optional().openapi({
      description: "a cut node: how many of its parent's children it stands for (this and later ones)",
    }),
    children: z.array(z.unknown().openapi({ description: "ProofNode" })),
  })
  .openapi("ProofNode");

export const PermissionExplainResponseSchema = z
  .object({
    can: CheckResultSchema,
    metadata: z.object({ check_count: z.number().int() }),
    proof: ProofNodeSchema,
    truncated: z.boolean(),
  })
  .openapi("PermissionExplainResponse", {
    example: {
      can: "CHECK_RESULT_ALLOWED",
      metadata: { check_count: 2 },
      proof: {
        kind: "permission",
        entity: { type: "doc", id: "1" },
        name: "edit",
        result: "ALLOWED",
        children: [
          {
            kind: "relation",
            entity: { type: "doc", id: "1" },
            name: "owner",
            result: "ALLOWED",
            children: [
              {
                kind: "direct",
                entity: { type: "doc", id: "1" },
                name: "owner",
                result: "ALLOWED",
                tuple: {
                  entity: { type: "doc", id: "1" },
                  relation: "owner",
                  subject: { type: "user", id: "1", relation: "" },
                },
                contextual: false,
                reason: "the tuple names the subject user:1",
                children: [],
              },
            ],
          },
        ],
      },
      truncated: false,
    },
  });
