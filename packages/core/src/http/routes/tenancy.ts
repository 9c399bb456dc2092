/** Tenancy endpoints: create, list, delete (need an unrestricted key or token). */

import {
  TenantCreateRequestSchema,
  TenantCreateResponseSchema,
  TenantDeleteResponseSchema,
  TenantListRequestSchema,
  TenantListResponseSchema,
} from "../../wire/schema.ts";
import { jsonAnswer } from "../pipeline.ts";
import { ROUTES } from "../route-table.ts";
import { rfc3339 } from "../time-format.ts";
import { type AppDeps, pageSize } from "./deps.ts";

const tenantToWire = (t: { id: string; name: string; createdAt: Date }) => ({
  id: t.id,
  name: t.name,
  created_at: rfc3339(t.createdAt),
});

export function registerTenancyRoutes({ routes, service, limits }: AppDeps): void {
  routes.add(
    {
      route: ROUTES.tenantsCreate,
      summary: "create tenant",
      tag: "Tenancy",
      body: TenantCreateRequestSchema,
      response: TenantCreateResponseSchema,
    },
    async ({ body: r }) => {
      return jsonAnswer({ tenant: tenantToWire(await service.createTenant(r.id, r.name)) });
    },
  );

  routes.add(
    {
      route: ROUTES.tenantsList,
      summary: "list tenants",
      tag: "Tenancy",
      body: TenantListRequestSchema,
      response: TenantListResponseSchema,
    },
    async ({ body: r }) => {
      const page = await service.listTenants(
        pageSize(r.page_size, "list", limits.maxReadPageSize),
        r.continuous_token,
      );
      return jsonAnswer({ tenants: page.items.map(tenantToWire), continuous_token: page.cursor });
    },
  );

  routes.add(
    {
      route: ROUTES.tenantsDelete,
      summary: "delete tenant",
      tag: "Tenancy",
      response: TenantDeleteResponseSchema,
    },
    async ({ req }) => {
      const deleted = await service.deleteTenant(req.param("id") ?? "");
      return jsonAnswer({ tenant_id: deleted.id });
    },
  );
}
