/** The AuthZEN suite against the core app over real HTTP (node:http, Hono's fetch adapter). */
import { afterAll, beforeAll } from "vitest";
import { startTestServer, type TestServer } from "../http/testing/harness.ts";
import { parsePresharedKeys } from "../settings/parsers.ts";
import { AUTHZEN_AUTH_KEYS, AUTHZEN_ROOT_TENANT, describeAuthzen } from "../testing/authzen/suite.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    auth: { mode: "preshared", keys: parsePresharedKeys(AUTHZEN_AUTH_KEYS) },
    authzenTenant: AUTHZEN_ROOT_TENANT,
  });
});
afterAll(() => server?.close());

describeAuthzen("the core app", () => server);
