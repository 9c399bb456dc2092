/**
 * The examples of packages/sdk/README.md: every ```ts block type-checks against the SDK's source (`@pemba/sdk`
 * points at src/index.ts), the typed example against the types `pemba codegen` makes of the schema the Node
 * example writes (`./authz.ts`), so the README cannot drift from the API or from its own schema; every permission
 * an example checks exists in that schema; and the install steps name the tarball `npm pack` writes.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseSchema } from "@pemba/core";
import { generateSchemaTypes } from "@pemba/node-server";
import { describe, expect, it } from "vitest";
import { compileFiles } from "./compile.ts";

const SDK_DIR = resolve(import.meta.dirname, "..");
const readme = readFileSync(join(SDK_DIR, "README.md"), "utf8");
const SDK_SOURCE = join(SDK_DIR, "src/index.ts");
const AUTHZ = join(SDK_DIR, "test", "readme-authz.ts");

/** The schema text the Node example writes (`pemba.writeSchema(`...`)`). */
function readmeSchema(): string {
  const m = /writeSchema\(`([\s\S]*?)`\)/.exec(readme);
  expect(m, "the Node example writes a schema").not.toBeNull();
  return m![1]!;
}

describe("README examples", () => {
  it("every ```ts block compiles; the typed one against the types of the README's schema", () => {
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    expect(blocks.some((b) => b.includes('from "./authz.ts"'))).toBe(true);
    const files: Record<string, string> = {
      [AUTHZ]: generateSchemaTypes(readmeSchema(), { sdkImport: SDK_SOURCE }),
    };
    blocks.forEach((block, i) => {
      const text = block
        .replaceAll('from "@pemba/sdk"', `from ${JSON.stringify(SDK_SOURCE)}`)
        .replaceAll('from "./authz.ts"', `from ${JSON.stringify(AUTHZ)}`);
      // Each block is a module of its own (top-level await, no clashing names).
      files[join(SDK_DIR, "test", `readme-example-${i + 1}.mts`)] = `${text}\nexport {};\n`;
    });
    const roots = Object.keys(files).filter((f) => f !== AUTHZ);
    const errors = compileFiles(roots, files, {
      types: ["node"],
      typeRoots: [resolve(SDK_DIR, "../../node_modules/@types")],
    });
    expect(errors.map((e) => `${e.file}:${e.line}: ${e.message}`)).toEqual([]);
  });

  it("every permission an example checks is one of its entity type in the README's schema", () => {
    const { entities } = parseSchema(readmeSchema());
    const permissionsOf = (type: string) => Object.keys(entities[type]?.permissions ?? {});
    // untyped calls (Node, browser, Worker): can("type:id", "permission", ...)
    const calls = [...readme.matchAll(/\bcan\(\s*"(\w+):[^"]*",\s*"(\w+)"/g)];
    expect(calls.length).toBeGreaterThanOrEqual(3);
    for (const [call, type, permission] of calls) expect(permissionsOf(type!), call).toContain(permission);
    // request objects: `type: "t"` or `entity_type: "t"`, then `permission: "p"`
    const named = [
      ...readme.matchAll(
        /\b(?:entity_type|type): "(\w+)"(?:(?!\b(?:entity_type|type): )[^`])*?\bpermission: "(\w+)"/g,
      ),
    ];
    expect(named.length).toBeGreaterThanOrEqual(2);
    for (const [text, type, permission] of named) expect(permissionsOf(type!), text).toContain(permission);
  });

  it("the install steps build, pack and install the tarball that npm pack names", () => {
    const pkg = JSON.parse(readFileSync(join(SDK_DIR, "package.json"), "utf8")) as {
      name: string;
      version: string;
      type: string;
    };
    const tarball = `${pkg.name.replace(/^@/, "").replace("/", "-")}-${pkg.version}.tgz`;
    const install = /## Install\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? "";
    expect(install).toContain("node packages/sdk/scripts/build.ts");
    expect(install).toContain(`npm pack                 # writes ${tarball}`);
    expect(install).toContain(`npm install /path/to/${tarball}`);
    expect(pkg.type).toBe("module");
    expect(install).toContain("ESM only");
    // the tarball npm pack leaves in packages/sdk is ignored by git, not left untracked in the clone
    const ignored = spawnSync("git", ["check-ignore", "--quiet", join("packages/sdk", tarball)], {
      cwd: resolve(SDK_DIR, "../.."),
    });
    expect(ignored.status).toBe(0);
  });
});
