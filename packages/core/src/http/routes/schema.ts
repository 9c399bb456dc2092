/** Schema endpoints: write, partial write, read, list. */
import { schemaToWire } from "../../schema/index.ts";
import { jsonAnswer } from "../pipeline.ts";
import { readJsonBody } from "../request-body.ts";
import { ROUTES } from "../route-table.ts";
import { goTimeString } from "../time-format.ts";
import { parseWire } from "../wire/pgv.ts";
import {
  SchemaListRequestSchema,
  SchemaListResponseSchema,
  SchemaPartialWriteRequestSchema,
  SchemaReadRequestSchema,
  SchemaReadResponseSchema,
  SchemaWriteRequestSchema,
  SchemaWriteResponseSchema,
} from "../wire/schema.ts";
import { type AppDeps, pageSize } from "./deps.ts";

export function registerSchemaRoutes({ routes, service, limits }: AppDeps): void {
  routes.add(
    {
      route: ROUTES.schemasWrite,
      summary: "write schema",
      description: "Parse errors answer HTTP 500, gRPC code 13, with a `line:column:` message.",
      tag: "Schema",
      body: SchemaWriteRequestSchema,
      response: SchemaWriteResponseSchema,
    },
    async ({ req, tenantId }) => {
      const r = parseWire(SchemaWriteRequestSchema, await readJsonBody(req, limits.maxSchemaBodyBytes));
      return jsonAnswer({ schema_version: await service.writeSchema(tenantId, r.schema) });
    },
  );

  routes.add(
    {
      route: ROUTES.schemasPartialWrite,
      summary: "partially update your authorization model",
      tag: "Schema",
      body: SchemaPartialWriteRequestSchema,
      response: SchemaWriteResponseSchema,
    },
    async ({ req, tenantId }) => {
      const r = parseWire(
        SchemaPartialWriteRequestSchema,
        await readJsonBody(req, limits.maxSchemaBodyBytes),
      );
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
    async ({ req, tenantId }) => {
      const r = parseWire(SchemaReadRequestSchema, await readJsonBody(req, limits.maxBodyBytes));
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
    async ({ req, tenantId }) => {
      const r = parseWire(SchemaListRequestSchema, await readJsonBody(req, limits.maxBodyBytes));
      const list = await service.listSchemas(
        tenantId,
        pageSize(r.page_size, 100, limits.maxReadPageSize),
        r.continuous_token,
      );
      return jsonAnswer({
        head: list.head,
        schemas: list.schemas.map((s) => ({ version: s.version, created_at: goTimeString(s.createdAt) })),
        continuous_token: list.continuousToken,
      });
    },
  );
}
