/** Schema endpoints: write, partial write, read, list. */
import { schemaToWire } from "../../schema/index.ts";
import {
  MAX_DIFF_SAMPLE,
  SchemaDiffRequestSchema,
  SchemaDiffResponseSchema,
  SchemaListRequestSchema,
  SchemaListResponseSchema,
  SchemaPartialWriteRequestSchema,
  SchemaReadRequestSchema,
  SchemaReadResponseSchema,
  SchemaWriteRequestSchema,
  SchemaWriteResponseSchema,
} from "../../wire/schema.ts";
import { schemaDiffToWire } from "../convert.ts";
import { jsonAnswer } from "../pipeline.ts";
import { ROUTES } from "../route-table.ts";
import { goTimeString } from "../time-format.ts";
import { type AppDeps, pageSize } from "./deps.ts";

export function registerSchemaRoutes({ routes, service, limits }: AppDeps): void {
  routes.add(
    {
      route: ROUTES.schemasWrite,
      summary: "write schema",
      description: "Parse errors answer HTTP 500, gRPC code 13, with a `line:column:` message.",
      tag: "Schema",
      body: SchemaWriteRequestSchema,
      maxBodyBytes: limits.maxSchemaBodyBytes,
      response: SchemaWriteResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      return jsonAnswer({ schema_version: await service.writeSchema(tenantId, r.schema) });
    },
  );

  routes.add(
    {
      route: ROUTES.schemasPartialWrite,
      summary: "partially update your authorization model",
      tag: "Schema",
      body: SchemaPartialWriteRequestSchema,
      maxBodyBytes: limits.maxSchemaBodyBytes,
      response: SchemaWriteResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      const version = await service.partialWriteSchema(tenantId, r.metadata.schema_version, r.partials);
      return jsonAnswer({ schema_version: version });
    },
  );

  routes.add(
    {
      route: ROUTES.schemasRead,
      summary: "read schema",
      tag: "Schema",
      body: SchemaReadRequestSchema,
      response: SchemaReadResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      const schema = await service.readSchema(tenantId, r.metadata.schema_version);
      return jsonAnswer({ schema: schemaToWire(schema.definition) });
    },
  );

  routes.add(
    {
      route: ROUTES.schemasList,
      summary: "list schema",
      description: "Newest first. page_size 0 = 100 (Permify's memory engine answers an empty page instead).",
      tag: "Schema",
      body: SchemaListRequestSchema,
      response: SchemaListResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      const list = await service.listSchemas(
        tenantId,
        pageSize(r.page_size, "list", limits.maxReadPageSize),
        r.continuous_token,
      );
      return jsonAnswer({
        head: list.head,
        schemas: list.schemas.map((s) => ({ version: s.version, created_at: goTimeString(s.createdAt) })),
        continuous_token: list.continuousToken,
      });
    },
  );

  routes.add(
    {
      route: ROUTES.schemasDiff,
      summary: "diff a schema against the stored one and its data (Pemba extension)",
      description:
        "What writing `schema` over the base (`metadata.schema_version`, empty = head, or the text `base_schema`) " +
        "would do to the data at `metadata.snap_token` (empty = head): removed entities, relations, permissions, " +
        "attributes and subject types with the live tuples and attributes each would orphan; attribute type " +
        "changes with the stored values that no longer fit; per permission whose definition or a dependency " +
        "changed, the stored (entity, subject) pairs whose decision flips (ALLOWED to DENIED and back) with up to " +
        "5 examples each way. Every pair is asked when there are at most `sample_size` (0 = 5,000; at most " +
        `${MAX_DIFF_SAMPLE.toLocaleString("en-US")}), else a seeded sample of that many (\`sampled\`: true), half along stored relationships, ` +
        "half uniform. Nothing is written.",
      tag: "Schema",
      body: SchemaDiffRequestSchema,
      // two schema texts at most (the schema and base_schema), each admitted at a schema write's size
      maxBodyBytes: 2 * limits.maxSchemaBodyBytes,
      response: SchemaDiffResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      const answer = await service.diffSchema(tenantId, {
        baseVersion: r.metadata.schema_version,
        baseSchema: r.base_schema,
        schema: r.schema,
        snapToken: r.metadata.snap_token,
        sampleSize: r.sample_size,
      });
      return jsonAnswer(schemaDiffToWire(answer));
    },
  );
}
