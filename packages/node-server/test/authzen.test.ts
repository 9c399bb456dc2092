/** The AuthZEN suite against `pemba serve` (the built CLI, node:http), as users run it. */
import { AUTHZEN_AUTH_KEYS, AUTHZEN_ROOT_TENANT, describeAuthzen } from "@pemba/core/testing/node";
import { afterAll, beforeAll } from "vitest";
import { type CliProcess, startServe } from "../src/testing/cli-process.ts";

let server: CliProcess & { url: string };
beforeAll(async () => {
  server = await startServe([
    "--database",
    "memory:",
    "--auth-keys",
    AUTHZEN_AUTH_KEYS,
    "--authzen-tenant",
    AUTHZEN_ROOT_TENANT,
  ]);
});
afterAll(async () => {
  if (server !== undefined && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
});

describeAuthzen("pemba serve (Node)", () => server);
