import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { startServe } from "../src/testing/cli-process.ts";
import { post, tuple, writeSchema } from "./api-client.ts";

describe("SQLite locked by another connection", () => {
  const dir = mkdtempSync(join(tmpdir(), "pemba-lock-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the server keeps answering /healthz while a write waits for the lock; the write then succeeds", async () => {
    const database = join(dir, "pemba.db");
    const server = await startServe(["--database", database]);
    try {
      await writeSchema(server.url);
      const other = new Database(database);
      other.exec("BEGIN IMMEDIATE"); // another process holds the write lock
      let writeDone = false;
      const write = post(server.url, "/v1/tenants/t1/data/write", {
        metadata: { schema_version: "" },
        tuples: [tuple("document:1", "owner", "user:alice")],
      }).finally(() => {
        writeDone = true;
      });
      await new Promise((r) => setTimeout(r, 300)); // the write is waiting for the lock by now
      // answered while the write still waits: the event loop is not blocked by the lock wait
      for (let i = 0; i < 3; i++) {
        const health = await fetch(`${server.url}/healthz`);
        expect(health.status).toBe(200);
        expect(writeDone).toBe(false);
      }
      other.exec("COMMIT");
      other.close();
      const written = await write;
      expect(written.status).toBe(200);
      expect(typeof written.body.snap_token).toBe("string");
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  }, 30_000);
});
