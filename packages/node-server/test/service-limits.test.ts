/**
 * `pemba serve --max-watch-streams` and PEMBA_MAX_COMPILED_SCHEMA_MB reach the service: a real process, real HTTP.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type CliProcess, startServe } from "../src/testing/cli-process.ts";
import { checkBody, post, writeSchema } from "./api-client.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-limits-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let server: (CliProcess & { url: string }) | undefined;
afterEach(async () => {
  if (server !== undefined && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  server = undefined;
});

const openWatch = (url: string, signal: AbortSignal) =>
  fetch(`${url}/v1/tenants/t1/watch`, { method: "POST", body: JSON.stringify({ snap_token: "" }), signal });

/** How many read_schema statements the server has run, from GET /metrics. */
async function schemaReads(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith('pemba_sql_query_duration_seconds_count{kind="read_schema"}'));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

describe("service limits from serve flags and environment", () => {
  it("--max-watch-streams 1: a second watch stream is refused with 429 ERROR_CODE_RATE_LIMITED", async () => {
    server = await startServe(["--database", "memory:", "--max-watch-streams", "1"]);
    await writeSchema(server.url);
    const abort = new AbortController();
    try {
      const first = await openWatch(server.url, abort.signal);
      expect(first.status).toBe(200);
      const second = await openWatch(server.url, abort.signal);
      expect(second.status).toBe(429);
      // a streaming endpoint's error, as Permify's gateway wraps it
      expect(await second.json()).toEqual({
        error: { code: 8, message: "too many watch streams (limit 1)", details: [] },
      });
    } finally {
      abort.abort();
    }
  });

  it("PEMBA_MAX_COMPILED_SCHEMA_MB=0 keeps no compiled schema: every check by version reads the schema again", async () => {
    const checks = async (url: string) => {
      const version = await writeSchema(url);
      const body = checkBody("document:1", "view", "user:alice");
      body.metadata.schema_version = version;
      const before = await schemaReads(url);
      for (let i = 0; i < 3; i++) {
        const r = await post(url, "/v1/tenants/t1/permissions/check", body);
        expect(r.body.can).toBe("CHECK_RESULT_DENIED");
      }
      return (await schemaReads(url)) - before;
    };
    server = await startServe(["--database", join(dir, "a.db"), "--replica", "off"], {
      PEMBA_MAX_COMPILED_SCHEMA_MB: "0",
    });
    expect(await checks(server.url)).toBe(3);
    server.child.kill("SIGTERM");
    await server.exited;
    server = await startServe(["--database", join(dir, "b.db"), "--replica", "off"]);
    expect(await checks(server.url)).toBe(0);
  });
});
