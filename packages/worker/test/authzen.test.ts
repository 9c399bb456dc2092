/** The AuthZEN suite against the Worker in workerd (`wrangler dev` on the repository's wrangler.toml). */
import { AUTHZEN_AUTH_KEYS, AUTHZEN_ROOT_TENANT, describeAuthzen } from "@pemba/core/testing/node";
import { afterAll, beforeAll } from "vitest";
import { startWranglerDev, type WranglerDev } from "../src/testing/wrangler-dev.ts";

let w: WranglerDev;
beforeAll(async () => {
  w = await startWranglerDev({
    PEMBA_DATABASE: "memory:",
    PEMBA_AUTH_KEYS: AUTHZEN_AUTH_KEYS,
    PEMBA_AUTHZEN_TENANT: AUTHZEN_ROOT_TENANT,
  });
}, 120_000);
afterAll(async () => {
  await w?.close();
});

describeAuthzen("the Worker (wrangler dev)", () => w);
