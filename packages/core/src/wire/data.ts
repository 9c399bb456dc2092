/** Data service requests/responses (writes, reads, deletes, run-bundle). */
import { z } from "@hono/zod-openapi";
import { AttributeFilterSchema, AttributeSchema, TupleFilterSchema, TupleSchema } from "./common.ts";
import { plainString, protoMessage, repeated, uint32 } from "./pgv.ts";

export const DataWriteRequestSchema = protoMessage("DataWriteRequest", {
  metadata: protoMessage("DataWriteRequestMetadata", { schema_version: plainString() }),
  tuples: repeated(TupleSchema),
  attributes: repeated(AttributeSchema),
});

export const RelationshipWriteRequestSchema = protoMessage("RelationshipWriteRequest", {
  metadata: protoMessage("RelationshipWriteRequestMetadata", { schema_version: plainString() }),
  tuples: repeated(TupleSchema, 1),
});

export const RelationshipReadRequestSchema = protoMessage("RelationshipReadRequest", {
  metadata: protoMessage("RelationshipReadRequestMetadata", { snap_token: plainString() }),
  filter: TupleFilterSchema,
  page_size: uint32(),
  continuous_token: plainString(),
});

export const RelationshipReadResponseSchema = z
  .object({ tuples: z.array(TupleSchema), continuous_token: z.string() })
  .openapi("RelationshipReadResponse");

export const AttributeReadRequestSchema = protoMessage("AttributeReadRequest", {
  metadata: protoMessage("AttributeReadRequestMetadata", { snap_token: plainString() }),
  filter: AttributeFilterSchema,
  page_size: uint32(),
  continuous_token: plainString(),
});

export const AttributeReadResponseSchema = z
  .object({ attributes: z.array(AttributeSchema), continuous_token: z.string() })
  .openapi("AttributeReadResponse");

export const DataDeleteRequestSchema = protoMessage("DataDeleteRequest", {
  tuple_filter: TupleFilterSchema,
  attribute_filter: AttributeFilterSchema,
});

export const RelationshipDeleteRequestSchema = protoMessage("RelationshipDeleteRequest", {
  filter: TupleFilterSchema.prefault({}),
});

export const BundleRunRequestSchema = protoMessage("BundleRunRequest", {
  name: plainString(),
  arguments: z.record(z.string(), z.string()).prefault({}),
});
