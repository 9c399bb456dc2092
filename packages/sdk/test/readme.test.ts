/**
 * The TypeScript examples of packages/sdk/README.md type-check against the SDK's source (`@pemba/sdk` and the
 * codegen output `./authz.ts` point at src/index.ts and the codegen fixture), so the README cannot drift from
 * the API.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { compileFiles } from "./compile.ts";

const SDK_DIR = resolve(import.meta.dirname, "..");

describe("README examples", () => {
  it("every ```ts block compiles", () => {
    const readme = readFileSync(join(SDK_DIR, "README.md"), "utf8");
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const files: Record<string, string> = {};
    blocks.forEach((block, i) => {
      const text = block
        .replaceAll('from "@pemba/sdk"', `from ${JSON.stringify(join(SDK_DIR, "src/index.ts"))}`)
        .replaceAll(
          'from "./authz.ts"',
          `from ${JSON.stringify(join(SDK_DIR, "test/fixtures/typed/authz.gen.ts"))}`,
        );
      // Each block is a module of its own (top-level await, no clashing names).
      files[join(SDK_DIR, "test", `readme-example-${i + 1}.mts`)] = `${text}\nexport {};\n`;
    });
    const errors = compileFiles(Object.keys(files), files, {
      types: ["node"],
      typeRoots: [resolve(SDK_DIR, "../../node_modules/@types")],
    });
    expect(errors.map((e) => `${e.file}:${e.line}: ${e.message}`)).toEqual([]);
  });
});
