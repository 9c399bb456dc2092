import { startPostgres } from "@pemba/core/store/testing/postgres-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { check, tuple, writeSchema, writeTuples } from "./api-client.ts";
import { type CliProcess, runCli, startServe } from "./cli-process.ts";

describe("pemba on PostgreSQL", () => {
  let pg: { url: string; stop(): Promise<void> };
  let server: (CliProcess & { url: string }) | undefined;

  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    await pg.stop();
  });

  it("migrate applies the tables on an empty database", async () => {
    const r = await runCli(["migrate", "--database", pg.url]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^migrate postgres:\/\/.*: .* \(\d+ ms\)\n$/m);
    expect(r.stdout).not.toContain(new URL(pg.url).password || "\u0000");
  });

  it("serve --database postgres://...: schema, data, checks", async () => {
    server = await startServe(["--database", pg.url]);
    const startup = await server.waitForLog((e) => typeof e.url === "string");
    expect(startup.store).toBe("postgres");
    await writeSchema(server.url);
    await writeTuples(server.url, [tuple("document:7", "viewer", "user:dana")]);
    expect(await check(server.url, "document:7", "view", "user:dana")).toBe("CHECK_RESULT_ALLOWED");
    expect(await check(server.url, "document:7", "edit", "user:dana")).toBe("CHECK_RESULT_DENIED");
    expect(await check(server.url, "document:8", "view", "user:dana")).toBe("CHECK_RESULT_DENIED");

    server.child.kill("SIGTERM");
    const result = await server.exited;
    expect(result.code).toBe(0);
  });
});
