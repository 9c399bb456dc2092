/** Schema endpoints: write, partial write, read, list. */
import { schemaToWire } from "../../schema/index.ts";
import { jsonAnswer } from "../pipeline.ts";
import { readJsonBody } from "../request-body.ts";
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
  const base = "/v1/tenants/{tenant_id}/schemas";

  routes.add(
    {
      method: "post",
      path: `${base}/write`,
      operationId: "schemas.write",
      summary: "write schema",
      description: "Parse errors answer HTTP 500, gRPC code 13, with a `line:column:` message.",
      tag: "Schema",
      requestMessage: "SchemaWriteRequest",
      body: SchemaWriteRequestSchema,
      response: SchemaWriteResponseSchema,
    },
    async ({ req, tenantId }) => {
      const r = parseWire(SchemaWriteRequestSchema, await readJsonBody(req, limits.maxBodyBytes));
      return jsonAnswer({ schema_version: await service.writeSchema(tenantId, r.schema) });
    },
  );

  routes.add(
    {
      method: "patch",
      path: `${base}/partial-write`,
      operationId: "schemas.partial-write",
      summary: "partially update your authorization model",
      tag: "Schema",
      requestMessage: "SchemaPartialWriteRequest",
      body: SchemaPartialWriteRequestSchema,
      response: SchemaWriteResponseSchema,
    },
    async ({ req, tenantId }) => {
      const r = parseWire(SchemaPartialWriteRequestSchema, await readJsonBody(req, limits.maxBodyBytes));
      const version = await service.partialWriteSchema(tenantId, r.metadata.schema_version, r.partials);
      return jsonAnswer({ schema_version: version });
    },
  );

  routes.add(
    {
      method: "post",
      path: `${base}/read`,
      operationId: "schemas.read",
      summary: "read schema",
      tag: "Schema",
      requestMessage: "SchemaReadRequest",
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
      method: "post",
      path: `${base}/list`,
      operationId: "schemas.list",
      summary: "list schema",
      description: "Newest first. page_size 0 = 100 (Permify's memory engine answers an empty page instead).",
      tag: "Schema",
      requestMessage: "SchemaListRequest",
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
