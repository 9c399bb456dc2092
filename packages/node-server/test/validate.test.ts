import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../src/testing/cli-process.ts";

const SCHEMA = `entity user {}
entity document {
  relation owner @user
  relation viewer @user
  permission view = owner or viewer
}
`;

function shape(assertions: string): string {
  return `schema: |-
${SCHEMA.split("\n")
  .map((l) => `  ${l}`)
  .join("\n")}
relationships:
  - document:1#owner@user:alice
  - document:1#viewer@user:bob
scenarios:
  - name: "viewers"
    checks:
      - entity: "document:1"
        subject: "user:bob"
        assertions:
${assertions}
`;
}

describe("pemba validate", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "pemba-validate-"));
    writeFileSync(join(dir, "passing.yaml"), shape("          view: true\n          owner: false"));
    writeFileSync(join(dir, "failing.yaml"), shape("          view: false\n          owner: false"));
    writeFileSync(join(dir, "schema.perm"), SCHEMA);
    writeFileSync(
      join(dir, "external.yaml"),
      shape("          view: true").replace(/schema: \|-\n( {2}.*\n)+/, "schema: schema.perm\n"),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("exits 0 and prints SUCCESS with timing when every assertion holds", async () => {
    const r = await runCli(["validate", join(dir, "passing.yaml")]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("SUCCESS: 2 of 2 assertions passed");
    expect(lines[1]).toMatch(/^validated .*passing\.yaml in \d+\.\d ms$/);
  });

  it("run directly, resolves a relative path against its working directory (not an inherited INIT_CWD)", async () => {
    const r = await runCli(["validate", "passing.yaml"], { INIT_CWD: tmpdir() }, dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^SUCCESS: 2 of 2 assertions passed\nvalidated passing\.yaml in /);
  });

  it("exits 1 and prints each failed assertion and the summary", async () => {
    const r = await runCli(["validate", join(dir, "failing.yaml")]);
    expect(r.code).toBe(1);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^fail: line \d+: .*view.* -> expected: DENIED actual: ALLOWED$/);
    expect(lines[1]).toBe("FAILED: 1 of 2 assertions passed, 1 failed");
  });

  it("reads a schema file relative to the validation file", async () => {
    const r = await runCli(["validate", "external.yaml"], {}, dir);
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n")[0]).toBe("SUCCESS: 1 of 1 assertion passed");
  });

  it("exits 2 with usage when no file is given", async () => {
    const r = await runCli(["validate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("usage: pemba validate <file.yaml> [--unchecked]\n");
  });
});
