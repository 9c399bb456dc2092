import { execFileSync } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { startPostgres } from "@pemba/core/testing/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, runCli, startServe } from "../src/testing/cli-process.ts";
import { check, tuple, writeSchema, writeTuples } from "./api-client.ts";

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

  it("connection failures name the cause: nothing listening, a missing database", async () => {
    // a port that was free a moment ago: nothing listens there
    const port = await new Promise<number>((done) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => done(port));
      });
    });
    const refused = await runCli([
      "migrate",
      "--database",
      `postgres://pemba:secret@127.0.0.1:${port}/pemba`,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `pemba: cannot connect to PostgreSQL at 127.0.0.1:${port} (database "pemba", user "pemba"): connect ECONNREFUSED 127.0.0.1:${port} [ECONNREFUSED]\n`,
    );
    const url = new URL(pg.url);
    url.pathname = "/no_such_database";
    const missing = await runCli(["serve", "--port", "0", "--database", url.href]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `pemba: cannot connect to PostgreSQL at ${url.hostname}:${url.port} (database "no_such_database", user "${decodeURIComponent(url.username)}"): database "no_such_database" does not exist [3D000]\n`,
    );
    expect(missing.stderr).not.toContain("Failed query");
  });

  it("a failing migration shows its cause under drizzle's Failed query", async () => {
    // psql from the same PostgreSQL binaries the throwaway server runs on
    const psql = join(process.env.PEMBA_PG_BIN ?? "/usr/lib/postgresql/15/bin", "psql");
    for (const sql of ["CREATE DATABASE locked_down", "CREATE ROLE weak LOGIN"])
      execFileSync(psql, [pg.url, "-v", "ON_ERROR_STOP=1", "-qc", sql]);
    const url = new URL(pg.url);
    url.pathname = "/locked_down";
    url.username = "weak";
    url.password = "";
    const r = await runCli(["migrate", "--database", url.href]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Failed query: CREATE SCHEMA IF NOT EXISTS "drizzle"');
    expect(r.stderr).toContain("  caused by: permission denied for database locked_down [42501]\n");
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
