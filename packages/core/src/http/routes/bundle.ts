/** Bundle endpoints: write, read, delete (running a bundle is data/run-bundle). */

import {
  BundleDeleteRequestSchema,
  BundleDeleteResponseSchema,
  BundleReadRequestSchema,
  BundleReadResponseSchema,
  BundleWriteRequestSchema,
  BundleWriteResponseSchema,
} from "../../wire/schema.ts";
import { jsonAnswer } from "../pipeline.ts";
import { ROUTES } from "../route-table.ts";
import type { AppDeps } from "./deps.ts";

export function registerBundleRoutes({ routes, service }: AppDeps): void {
  routes.add(
    {
      route: ROUTES.bundleWrite,
      summary: "write bundle",
      tag: "Bundle",
      body: BundleWriteRequestSchema,
      response: BundleWriteResponseSchema,
    },
    async ({ body: r, tenantId }) => {
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
    async ({ body: r, tenantId }) => {
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
    async ({ body: r, tenantId }) => {
      return jsonAnswer({ name: await service.deleteBundle(tenantId, r.name) });
    },
  );
}
