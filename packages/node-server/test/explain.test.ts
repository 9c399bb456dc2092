/** `pemba explain` against a real `pemba serve` (SQLite file, a preshared key), both as child processes. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, runCli, startServe } from "../src/testing/cli-process.ts";
import { post, tuple } from "./api-client.ts";

const SCHEMA = `entity user {}
entity group {
  relation member @user @group#member
}
entity document {
  relation owner @user
  relation viewer @user @group#member
  attribute public boolean
  permission view = owner or viewer or public
}
`;
const KEY = { authorization: "Bearer secret1" };

describe("pemba explain", () => {
  let dir: string;
  let server: CliProcess & { url: string };
  const explain = (args: string[]) => runCli(["explain", ...args, "--url", server.url, "--token", "secret1"]);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "pemba-explain-"));
    server = await startServe(["--database", join(dir, "authz.db"), "--auth-keys", "secret1"]);
    expect((await post(server.url, "/v1/tenants/t1/schemas/write", { schema: SCHEMA }, KEY)).status).toBe(
      200,
    );
    const written = await post(
      server.url,
      "/v1/tenants/t1/data/write",
      {
        metadata: {},
        tuples: [
          tuple("document:1", "owner", "user:alice"),
          {
            entity: { type: "document", id: "1" },
            relation: "viewer",
            subject: { type: "group", id: "eng", relation: "member" },
          },
          tuple("group:eng", "member", "user:bob"),
        ],
      },
      KEY,
    );
    expect(written.status).toBe(200);
  });
  afterAll(async () => {
    if (server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints the granting path as a tree", async () => {
    const r = await explain(["document:1", "view", "user:bob"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        "ALLOWED document:1#view for user:bob (check_count 4)",
        "✓ permission document:1#view",
        "└─ ✓ union",
        "   └─ ✓ union",
        "      └─ ✓ relation document:1#viewer",
        "         └─ ✓ relation group:eng#member via document:1#viewer@group:eng#member",
        "            └─ ✓ direct group:eng#member via group:eng#member@user:bob — the tuple names the subject user:bob",
        "",
      ].join("\n"),
    );
  });

  it("prints every branch tried for DENIED, with why each failed", async () => {
    const r = await explain(["document:1", "view", "user:carol"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        "DENIED document:1#view for user:carol (check_count 5)",
        "✗ permission document:1#view",
        "└─ ✗ union",
        "   ├─ ✗ union",
        "   │  ├─ ✗ relation document:1#owner — no tuple document:1#owner@user:carol",
        "   │  └─ ✗ relation document:1#viewer — no tuple document:1#viewer@user:carol",
        "   │     └─ ✗ relation group:eng#member via document:1#viewer@group:eng#member — no tuple group:eng#member@user:carol",
        "   └─ ✗ attribute document:1#public — no attribute document:1$public (false)",
        "",
      ].join("\n"),
    );
  });

  it("--json prints the server's answer; --context sends contextual data", async () => {
    const json = await explain(["document:1", "view", "user:alice", "--json"]);
    expect(json.code).toBe(0);
    const direct = await post(
      server.url,
      "/v1/tenants/t1/permissions/explain",
      {
        metadata: { depth: 20 },
        entity: { type: "document", id: "1" },
        permission: "view",
        subject: { type: "user", id: "alice" },
      },
      KEY,
    );
    expect(JSON.parse(json.stdout)).toEqual(direct.body);
    expect(direct.body.can).toBe("CHECK_RESULT_ALLOWED");
    const context = join(dir, "context.json");
    writeFileSync(
      context,
      JSON.stringify({
        tuples: [],
        attributes: [
          {
            entity: { type: "document", id: "2" },
            attribute: "public",
            value: { "@type": "type.googleapis.com/base.v1.BooleanValue", data: true },
          },
        ],
      }),
    );
    const r = await explain(["document:2", "view", "user:zed", "--context", context]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("ALLOWED document:2#view for user:zed");
    expect(r.stdout).toContain("└─ ✓ attribute document:2#public = true (contextual)");
  });

  it("exits 1 with the server's error (no key, unknown type), 2 for bad usage", async () => {
    const noKey = await runCli(["explain", "document:1", "view", "user:bob", "--url", server.url]);
    expect(noKey.code).toBe(1);
    // the status of a check without a key, as Permify answers it
    expect(noKey.stderr).toMatch(/^pemba: the server answered \d{3}: ERROR_CODE_MISSING_BEARER_TOKEN\n$/);
    const unknown = await explain(["folder:1", "view", "user:bob"]);
    expect(unknown).toMatchObject({ code: 1, stdout: "" });
    expect(unknown.stderr).toMatch(/^pemba: the server answered \d{3}: .*ERROR_CODE_SCHEMA_NOT_FOUND/);
    const usage = await runCli(["explain", "document:1", "view"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^usage: pemba explain <type:id> <permission>/);
    const badRef = await runCli(["explain", "document", "view", "user:bob"]);
    expect(badRef.code).toBe(2);
  });
});
