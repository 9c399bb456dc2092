/** Data endpoints: writes, reads, deletes, run-bundle. */
import { PembaError } from "../../errors.ts";
import { SnapTokenResponseSchema } from "../../wire/common.ts";
import {
  AttributeReadRequestSchema,
  AttributeReadResponseSchema,
  BundleRunRequestSchema,
  DataDeleteRequestSchema,
  DataWriteRequestSchema,
  RelationshipDeleteRequestSchema,
  RelationshipReadRequestSchema,
  RelationshipReadResponseSchema,
  RelationshipWriteRequestSchema,
} from "../../wire/data.ts";
import {
  attributeFilterFromWire,
  attributeFromWire,
  attributeToWire,
  tupleFilterFromWire,
  tupleFromWire,
  tupleToWire,
} from "../convert.ts";
import { jsonAnswer } from "../pipeline.ts";
import { ROUTES } from "../route-table.ts";
import { type AppDeps, pageSize } from "./deps.ts";

export function registerDataRoutes({ routes, service, limits }: AppDeps): void {
  const assertWriteSize = (n: number) => {
    if (n > limits.maxDataPerWrite) throw new PembaError("ERROR_CODE_MAX_DATA_PER_WRITE_EXCEEDED");
  };

  routes.add(
    {
      route: ROUTES.dataWrite,
      summary: "write data",
      description: `At most ${limits.maxDataPerWrite} tuples + attributes per request; validated against the schema before anything is written.`,
      tag: "Data",
      body: DataWriteRequestSchema,
      response: SnapTokenResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      assertWriteSize(r.tuples.length + r.attributes.length);
      const snapToken = await service.writeData(
        tenantId,
        r.metadata.schema_version,
        r.tuples.map(tupleFromWire),
        r.attributes.map(attributeFromWire),
      );
      return jsonAnswer({ snap_token: snapToken });
    },
  );

  routes.add(
    {
      route: ROUTES.relationshipsWrite,
      summary: "write relationships",
      tag: "Data",
      body: RelationshipWriteRequestSchema,
      response: SnapTokenResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      assertWriteSize(r.tuples.length);
      const snapToken = await service.writeData(
        tenantId,
        r.metadata.schema_version,
        r.tuples.map(tupleFromWire),
        [],
      );
      return jsonAnswer({ snap_token: snapToken });
    },
  );

  routes.add(
    {
      route: ROUTES.relationshipsRead,
      summary: "read relationships",
      tag: "Data",
      body: RelationshipReadRequestSchema,
      response: RelationshipReadResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      const page = await service.readRelationships(
        tenantId,
        r.metadata.snap_token,
        tupleFilterFromWire(r.filter),
        pageSize(r.page_size, "read", limits.maxReadPageSize),
        r.continuous_token,
      );
      return jsonAnswer({ tuples: page.items.map(tupleToWire), continuous_token: page.cursor });
    },
  );

  routes.add(
    {
      route: ROUTES.attributesRead,
      summary: "read attributes",
      tag: "Data",
      body: AttributeReadRequestSchema,
      response: AttributeReadResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      const page = await service.readAttributes(
        tenantId,
        r.metadata.snap_token,
        attributeFilterFromWire(r.filter),
        pageSize(r.page_size, "read", limits.maxReadPageSize),
        r.continuous_token,
      );
      return jsonAnswer({ attributes: page.items.map(attributeToWire), continuous_token: page.cursor });
    },
  );

  routes.add(
    {
      route: ROUTES.dataDelete,
      summary: "delete data",
      description:
        'Empty tuple_filter and attribute_filter delete nothing and answer `{"snap_token":""}` (as Permify does).',
      tag: "Data",
      body: DataDeleteRequestSchema,
      response: SnapTokenResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      const snapToken = await service.deleteData(
        tenantId,
        tupleFilterFromWire(r.tuple_filter),
        attributeFilterFromWire(r.attribute_filter),
      );
      return jsonAnswer({ snap_token: snapToken });
    },
  );

  routes.add(
    {
      route: ROUTES.relationshipsDelete,
      summary: "delete relationships",
      description: 'An empty filter deletes nothing and answers `{"snap_token":""}` (as Permify does).',
      tag: "Data",
      body: RelationshipDeleteRequestSchema,
      response: SnapTokenResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      return jsonAnswer({
        snap_token: await service.deleteRelationships(tenantId, tupleFilterFromWire(r.filter)),
      });
    },
  );

  routes.add(
    {
      route: ROUTES.bundleRun,
      summary: "run bundle",
      tag: "Data",
      body: BundleRunRequestSchema,
      response: SnapTokenResponseSchema,
    },
    async ({ body: r, tenantId }) => {
      return jsonAnswer({ snap_token: await service.runBundle(tenantId, r.name, r.arguments) });
    },
  );
}
