/** Bundle endpoints: write, read, delete (running a bundle is data/run-bundle). */

import { jsonAnswer } from "../pipeline.ts";
import { readJsonBody } from "../request-body.ts";
import { ROUTES } from "../route-table.ts";
import { parseWire } from "../wire/pgv.ts";
import {
  BundleDeleteRequestSchema,
  BundleDeleteResponseSchema,
  BundleReadRequestSchema,
  BundleReadResponseSchema,
  BundleWriteRequestSchema,
  BundleWriteResponseSchema,
} from "../wire/schema.ts";
import type { AppDeps } from "./deps.ts";

export function registerBundleRoutes({ routes, service, limits }: AppDeps): void {
  routes.add(
    {
      route: ROUTES.bundleWrite,
      summary: "write bundle",
      tag: "Bundle",
      body: BundleWriteRequestSchema,
      response: BundleWriteResponseSchema,
    },
    async ({ req, tenantId }) => {
      const r = parseWire(BundleWriteRequestSchema, await readJsonBody(req, limits.maxBodyBytes));
      return jsonAnswer({ names: await service.writeBundles(tenantId, r.bundles) });
    },
  );

  routes.add(
    {
      route: ROUTES.bundleRead,
      summary: "read bundle",
      tag: "Bundle",
      body: BundleReadRequestSchema,
      response: BundleReadResponseSchema,
    },
    async ({ req, tenantId }) => {
      const r = parseWire(BundleReadRequestSchema, await readJsonBody(req, limits.maxBodyBytes));
      const b = await service.readBundle(tenantId, r.name);
      return jsonAnswer({
        bundle: {
          name: b.name,
          arguments: b.arguments,
          operations: b.operations.map((o) => ({
            relationships_write: o.relationships_write,
            relationships_delete: o.relationships_delete,
            attributes_write: o.attributes_write,
            attributes_delete: o.attributes_delete,
          })),
        },
      });
    },
  );

  routes.add(
    {
      route: ROUTES.bundleDelete,
      summary: "delete bundle",
      tag: "Bundle",
      body: BundleDeleteRequestSchema,
      response: BundleDeleteResponseSchema,
    },
    async ({ req, tenantId }) => {
      const r = parseWire(BundleDeleteRequestSchema, await readJsonBody(req, limits.maxBodyBytes));
      return jsonAnswer({ name: await service.deleteBundle(tenantId, r.name) });
    },
  );
}
