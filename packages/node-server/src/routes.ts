/** Request paths as route templates for logs: tenant ids are data, not routes. */
const TENANT_PATH = /^\/v1\/tenants\/([^/]+)(\/.*)?$/;

export function normalizeRoute(method: string, path: string): string {
  const match = TENANT_PATH.exec(path);
  if (match === null) return path;
  const rest = match[2];
  if (rest === undefined) {
    // POST /v1/tenants/create and /v1/tenants/list are fixed paths; DELETE /v1/tenants/{id} carries an id.
    return method === "DELETE" ? "/v1/tenants/:id" : path;
  }
  return `/v1/tenants/:tenant_id${rest}`;
}
