/**
 * Two `pemba serve` processes on one SQLite file (each with its in-memory replica): process A writes a schema that
 * revokes access and then data; a check on process B carrying A's snap token is answered with the new schema at
 * once, although B cached the old head a moment earlier (the head schema TTL alone would leave it stale).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, startServe } from "../src/testing/cli-process.ts";
import { post, TEST_SCHEMA, tuple, writeSchema } from "./api-client.ts";

const REVOKING = TEST_SCHEMA.replace("permission view = owner or viewer", "permission view = owner");

describe("pemba serve: the head schema across processes", () => {
  const dir = mkdtempSync(join(tmpdir(), "pemba-two-serve-"));
  const database = join(dir, "shared.db");
  let a: CliProcess & { url: string };
  let b: CliProcess & { url: string };
  beforeAll(async () => {
    a = await startServe(["--database", database]);
    b = await startServe(["--database", database]);
  });
  afterAll(async () => {
    for (const p of [a, b]) {
      p?.child.kill("SIGTERM");
      await p?.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const write = async (url: string, tuples: ReturnType<typeof tuple>[]) => {
    const r = await post(url, "/v1/tenants/t1/data/write", { metadata: { schema_version: "" }, tuples });
    expect(r.status).toBe(200);
    return r.body.snap_token as string;
  };
  const check = async (url: string, snapToken: string) => {
    const r = await post(url, "/v1/tenants/t1/permissions/check", {
      metadata: { schema_version: "", snap_token: snapToken, depth: 20 },
      entity: { type: "document", id: "1" },
      permission: "view",
      subject: { type: "user", id: "1", relation: "" },
    });
    expect(r.status).toBe(200);
    return r.body.can;
  };

  it("B answers a request carrying A's newer token with A's revoking schema", async () => {
    await writeSchema(a.url, TEST_SCHEMA);
    const granted = await write(a.url, [tuple("document:1", "viewer", "user:1")]);
    expect(await check(b.url, granted)).toBe("CHECK_RESULT_ALLOWED");
    expect(await check(b.url, "")).toBe("CHECK_RESULT_ALLOWED"); // B holds the granting head now

    await writeSchema(a.url, REVOKING);
    const revoked = await write(a.url, [tuple("document:2", "owner", "user:2")]);
    expect(await check(b.url, revoked)).toBe("CHECK_RESULT_DENIED");
    expect(await check(b.url, "")).toBe("CHECK_RESULT_DENIED");
  });
});
