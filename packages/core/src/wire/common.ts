/** Wire shapes shared by the endpoints (proto `base.v1` messages), with Permify's PGV rules. */
import { z } from "@hono/zod-openapi";
import { parseRfc3339 } from "../expiry.ts";
import { optionalMessage, patternString, plainString, protoMessage, repeated } from "./pgv.ts";

export const TENANT_ID_PATTERN = "^([a-zA-Z0-9_\\-@\\.:+]{1,128}|\\*)$";
export const NAME_PATTERN = "^[a-zA-Z_]{1,64}$";
export const ID_PATTERN = "^([a-zA-Z0-9_\\-@\\.:+]{1,128}|\\*)$";

export const tenantIdRegex = new RegExp(TENANT_ID_PATTERN);
export const nameRegex = new RegExp(NAME_PATTERN);
export const idRegex = new RegExp(ID_PATTERN);

export const EntitySchema = protoMessage("Entity", {
  type: patternString(NAME_PATTERN, 64),
  id: patternString(ID_PATTERN, 128),
});

export const SubjectSchema = protoMessage("Subject", {
  type: patternString(NAME_PATTERN, 64),
  id: patternString(ID_PATTERN, 128),
  relation: patternString(NAME_PATTERN, 64, true),
});

export const RelationReferenceSchema = protoMessage("RelationReference", {
  type: patternString(NAME_PATTERN, 64),
  relation: patternString(NAME_PATTERN, 64, true),
});

/** Pemba extension: `expires_at` of a tuple or attribute (absent or null = never expires). */
const expiresAtField = () =>
  z.preprocess(
    (v: unknown) => (v === null || v === "" ? undefined : v),
    z
      .string({ error: "value must be an RFC 3339 timestamp string" })
      .refine((v) => parseRfc3339(v) !== undefined, { error: "value must be an RFC 3339 timestamp" })
      .optional()
      .openapi({
        format: "date-time",
        description: "Pemba extension: the row is absent from every read from this instant on (UTC)",
      }),
  );

export const TupleSchema = protoMessage("Tuple", {
  entity: EntitySchema,
  relation: patternString(NAME_PATTERN, 64),
  subject: SubjectSchema,
  expires_at: expiresAtField(),
});

/**
 * An attribute value: Permify's `google.protobuf.Any` (`{"@type": "type.googleapis.com/base.v1.BooleanValue",
 * "data": true}`) or Pemba's short form with exactly one of `boolean`, `string`, `integer`, `double`,
 * `boolean_array`, `string_array`, `integer_array`, `double_array` (what Permify's k6 seed script sends).
 */
export const AttributeValueSchema = z
  .object({
    "@type": z.string().optional(),
    data: z.unknown().optional(),
    boolean: z.boolean().optional(),
    string: z.string().optional(),
    integer: z.number().int().optional(),
    double: z.number().optional(),
    boolean_array: z.array(z.boolean()).optional(),
    string_array: z.array(z.string()).optional(),
    integer_array: z.array(z.number().int()).optional(),
    double_array: z.array(z.number()).optional(),
  })
  .passthrough()
  .openapi("AttributeValue", {
    example: { "@type": "type.googleapis.com/base.v1.BooleanValue", data: true },
  });

export const AttributeSchema = protoMessage("Attribute", {
  entity: EntitySchema,
  // Permify's proto has no rule on this field: a name the schema does not declare is ATTRIBUTE_DEFINITION_NOT_FOUND.
  attribute: plainString(),
  value: AttributeValueSchema.prefault({}),
  expires_at: expiresAtField(),
});

export const ContextSchema = protoMessage("Context", {
  tuples: repeated(TupleSchema),
  attributes: repeated(AttributeSchema),
  data: z.record(z.string(), z.unknown()).prefault({}),
});

export const ArgumentSchema = z
  .object({ computed_attribute: z.object({ name: z.string() }).optional() })
  .openapi("Argument");

export const EntityFilterSchema = protoMessage("EntityFilter", {
  type: plainString(),
  ids: repeated(z.string()),
});

export const SubjectFilterSchema = protoMessage("SubjectFilter", {
  type: plainString(),
  ids: repeated(z.string()),
  relation: plainString(),
});

export const TupleFilterSchema = protoMessage("TupleFilter", {
  entity: optionalMessage(EntityFilterSchema),
  relation: plainString(),
  subject: optionalMessage(SubjectFilterSchema),
});

export const AttributeFilterSchema = protoMessage("AttributeFilter", {
  entity: optionalMessage(EntityFilterSchema),
  attributes: repeated(z.string()),
});

export const ErrorSchema = z
  .object({ code: z.number().int(), message: z.string(), details: z.array(z.unknown()) })
  .openapi("Status", { example: { code: 5, message: "ERROR_CODE_SCHEMA_NOT_FOUND", details: [] } });

export const SnapTokenResponseSchema = z.object({ snap_token: z.string() }).openapi("SnapTokenResponse");

export type WireEntity = z.output<typeof EntitySchema>;
export type WireSubject = z.output<typeof SubjectSchema>;
export type WireTuple = z.output<typeof TupleSchema>;
export type WireAttribute = z.output<typeof AttributeSchema>;
export type WireAttributeValue = z.output<typeof AttributeValueSchema>;
export type WireContext = z.output<typeof ContextSchema>;
export type WireTupleFilter = z.output<typeof TupleFilterSchema>;
export type WireAttributeFilter = z.output<typeof AttributeFilterSchema>;
