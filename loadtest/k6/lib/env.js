// What every script reads from the environment (`k6 run -e NAME=value`, or the variables of a Grafana Cloud k6
// test): the base URL, the tenant and the bearer token; and the cloud options of Permify's published script.
//   PEMBA_URL     base URL of Pemba (default http://127.0.0.1:3476; a deployed Worker: https://pemba.<you>.workers.dev)
//   TENANT_ID     tenant (default t1)
//   PEMBA_TOKEN   bearer token (a preshared key, or an access token); sent as `Authorization: Bearer <token>`
//   K6_CLOUD_PROJECT_ID, LOAD_ZONE   for `k6 cloud run` (default load zone: Permify's, amazon:de:frankfurt)

export const BASE_URL = __ENV.PEMBA_URL || "http://127.0.0.1:3476";
export const TENANT_ID = __ENV.TENANT_ID || "t1";
export const TOKEN = __ENV.PEMBA_TOKEN || "";

/** JSON request headers with the bearer token (none when PEMBA_TOKEN is empty). */
export function jsonHeaders(token = TOKEN) {
  const headers = { "Content-Type": "application/json" };
  if (token !== "") headers.Authorization = `Bearer ${token}`;
  return headers;
}

/** `options.cloud` as in Permify's published k6test.js (v1.3 document); used only by `k6 cloud run`. */
export const cloud = {
  name: __ENV.K6_CLOUD_NAME || "pemba",
  projectID: __ENV.K6_CLOUD_PROJECT_ID ? Number(__ENV.K6_CLOUD_PROJECT_ID) : undefined,
  distribution: {
    distributionLabel1: { loadZone: __ENV.LOAD_ZONE || "amazon:de:frankfurt", percent: 100 },
  },
};

/** Number from the environment, or the default. */
export function envNumber(name, fallback) {
  const value = __ENV[name];
  return value === undefined || value === "" ? fallback : Number(value);
}

/** A k6 duration string scaled by TIME_SCALE (the CI smoke runs the published stages at a tenth). */
export function scaled(seconds) {
  return `${Math.max(1, Math.round(seconds * envNumber("TIME_SCALE", 1)))}s`;
}
