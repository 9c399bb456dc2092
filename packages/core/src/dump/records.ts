/**
 * Pemba's tenant dump (docs/DUMP.md): NDJSON, one record a line, in this order: a header, the schema, tuples and
 * attributes (any order between them), a trailer. The zod schemas below are the format's definition and render
 * docs/dump.schema.json; the reader (reader.ts) checks each line by hand with the same rules, because zod costs
 * more per line than the rest of an import.
 */
import { z } from "zod";
import { NAME_PATTERN } from "../wire/common.ts";

export const DUMP_FORMAT = "pemba-dump";
export const DUMP_VERSION = 1;

/** An entity or subject id: Permify's id rule without the `*` wildcard alone, which no stored row has. */
export const DUMP_ID_PATTERN = "^[a-zA-Z0-9_\\-@\\.:+]{1,128}$";
const RFC3339 =
  "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$";

const name = () => z.string().regex(new RegExp(NAME_PATTERN));
const id = () => z.string().regex(new RegExp(DUMP_ID_PATTERN));
const expiresAt = () =>
  z
    .string()
    .regex(new RegExp(RFC3339))
    .optional()
    .describe("RFC 3339 instant from which the row is absent from reads; absent = never expires");

export const DumpHeaderSchema = z
  .object({
    type: z.literal("header"),
    format: z.literal(DUMP_FORMAT),
    version: z.literal(DUMP_VERSION),
    tenant: z.string().min(1),
    schema_version: z.string().describe("the version of the schema record that follows; empty when none"),
    snap_token: z.string().describe("the snap token the dump was read at"),
    created_at: z.string().regex(new RegExp(RFC3339)),
  })
  .strict()
  .describe("line 1");

export const DumpSchemaRecordSchema = z
  .object({
    type: z.literal("schema"),
    version: z.string().min(1),
    text: z.string().describe("the schema in Permify's language"),
  })
  .strict()
  .describe("line 2 when the tenant has a schema");

export const DumpTupleSchema = z
  .object({
    type: z.literal("tuple"),
    entity_type: name(),
    entity_id: id(),
    relation: name(),
    subject_type: name(),
    subject_id: id(),
    subject_relation: name().optional().describe("absent = a direct subject"),
    expires_at: expiresAt(),
  })
  .strict();

/** The attribute value types a dump record may name. */
export const DUMP_ATTRIBUTE_TYPES = [
  "ATTRIBUTE_TYPE_BOOLEAN",
  "ATTRIBUTE_TYPE_BOOLEAN_ARRAY",
  "ATTRIBUTE_TYPE_STRING",
  "ATTRIBUTE_TYPE_STRING_ARRAY",
  "ATTRIBUTE_TYPE_INTEGER",
  "ATTRIBUTE_TYPE_INTEGER_ARRAY",
  "ATTRIBUTE_TYPE_DOUBLE",
  "ATTRIBUTE_TYPE_DOUBLE_ARRAY",
] as const;

export const DumpAttributeSchema = z
  .object({
    type: z.literal("attribute"),
    entity_type: name(),
    entity_id: id(),
    attribute: name(),
    value_type: z.enum(DUMP_ATTRIBUTE_TYPES),
    value: z
      .union([z.boolean(), z.string(), z.number(), z.array(z.union([z.boolean(), z.string(), z.number()]))])
      .describe("the JSON value of value_type: a boolean, string or number, or an array of one of them"),
    expires_at: expiresAt(),
  })
  .strict();

export const DumpTrailerSchema = z
  .object({
    type: z.literal("trailer"),
    tuples: z.number().int().min(0),
    attributes: z.number().int().min(0),
    lines: z.number().int().min(1).describe("lines before the trailer (header and schema included)"),
    crc32: z
      .string()
      .regex(/^[0-9a-f]{8}$/)
      .describe(
        "CRC-32 (IEEE) of the UTF-8 bytes of every line between the header and the trailer, newlines included",
      ),
  })
  .strict()
  .describe("the last line");

export const DumpRecordSchema = z
  .discriminatedUnion("type", [
    DumpHeaderSchema,
    DumpSchemaRecordSchema,
    DumpTupleSchema,
    DumpAttributeSchema,
    DumpTrailerSchema,
  ])
  .describe("One line of a Pemba tenant dump (NDJSON). See docs/DUMP.md.");

export type DumpHeader = z.infer<typeof DumpHeaderSchema>;
export type DumpSchemaRecord = z.infer<typeof DumpSchemaRecordSchema>;
export type DumpTrailer = z.infer<typeof DumpTrailerSchema>;

/** The JSON schema of one line (docs/dump.schema.json). */
export function dumpJsonSchema(): unknown {
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: "https://pemba.dev/schemas/dump-v1.json",
    ...(z.toJSONSchema(DumpRecordSchema) as Record<string, unknown>),
  };
}
