/**
 * `pemba codegen`: the generated types for test/fixtures/typed/schema.perm, and proof that they reject misuse at
 * compile time: fixtures/typed/usage.ts compiles cleanly with its `@ts-expect-error` directives, and with the
 * directives blanked out every marked line (and only those) is a compile error.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { generateSchemaTypes } from "@pemba/node-server";
import { runCli } from "@pemba/node-server/testing";
import { afterAll, describe, expect, it } from "vitest";
import { type CompileError, compileFiles } from "./compile.ts";

const TYPED = resolve(import.meta.dirname, "fixtures/typed");
const SCHEMA_FILE = join(TYPED, "schema.perm");
const USAGE_FILE = join(TYPED, "usage.ts");

/** Compiles usage.ts (with `replace` applied to its text) and answers its errors. */
function compileUsage(replace: (text: string) => string = (t) => t): CompileError[] {
  return compileFiles([USAGE_FILE], { [USAGE_FILE]: replace(readFileSync(USAGE_FILE, "utf8")) });
}

describe("pemba codegen", () => {
  const scratch = mkdtempSync(join(tmpdir(), "pemba-codegen-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("the committed fixture types are what codegen makes of schema.perm", () => {
    const generated = generateSchemaTypes(readFileSync(SCHEMA_FILE, "utf8"), {
      sdkImport: "../../../src/index.ts",
      sourceName: "schema.perm",
    });
    expect(readFileSync(join(TYPED, "authz.gen.ts"), "utf8")).toBe(generated);
    expect(generated).toContain(
      '      viewer: { type: "user"; relation?: "" } | { type: "organization"; relation: "member" };',
    );
    expect(generated).toContain(
      '    attributes: { public: "boolean"; tags: "string[]"; rating: "integer" };',
    );
    expect(generated).toContain("    permissions: never;");
  });

  it("correct calls compile and every @ts-expect-error misuse is an error", () => {
    expect(compileUsage()).toEqual([]);
  });

  it("without the directives, exactly the marked misuses fail to compile, each on its own line", () => {
    const lines = readFileSync(USAGE_FILE, "utf8").split("\n");
    const marked = lines.flatMap((l, i) => (l.trim().startsWith("// @ts-expect-error") ? [i + 2] : []));
    expect(marked).toHaveLength(15);
    const errors = compileUsage((text) => text.replaceAll("// @ts-expect-error", "// (expected error)"));
    expect(errors.every((e) => e.file === USAGE_FILE)).toBe(true);
    expect([...new Set(errors.map((e) => e.line))].sort((a, b) => a - b)).toEqual(marked);
  });

  it("the CLI writes the same module to -o (default import @pemba/sdk) and prints it without -o", async () => {
    const out = join(scratch, "authz.ts");
    const written = await runCli(["codegen", SCHEMA_FILE, "-o", out]);
    expect(written.code).toBe(0);
    expect(written.stderr).toMatch(/^pemba codegen: wrote .*authz\.ts from .*schema\.perm in [\d.]+ ms\n$/);
    const text = readFileSync(out, "utf8");
    expect(text).toBe(generateSchemaTypes(readFileSync(SCHEMA_FILE, "utf8"), { sourceName: "schema.perm" }));
    expect(text).toContain('import type { TypedClient } from "@pemba/sdk";');
    const printed = await runCli(["codegen", SCHEMA_FILE, "--type-name", "AppSchema", "--sdk-import", "sdk"]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain("export type AppSchema = {");
    expect(printed.stdout).toContain("export type AppClient = TypedClient<AppSchema>;");
    expect(printed.stdout).toContain('import type { TypedClient } from "sdk";');
  });

  it("the CLI refuses a schema that does not parse (exit 1, line:column) and a missing file argument (exit 2)", async () => {
    const bad = join(scratch, "bad.perm");
    writeFileSync(bad, "entity user {}\nentity doc {\n  relation owner @nobody\n}\n");
    const r = await runCli(["codegen", bad, "-o", join(scratch, "never.ts")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "pemba: 3:20: relation reference not found in entity references [ERROR_CODE_SCHEMA_COMPILE]\n",
    );
    const usage = await runCli(["codegen"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("usage: pemba codegen <schema.perm> [-o <out.ts>]");
  });
});
