/**
 * The packages' public surface: every import of another workspace package goes through one of the entry points
 * its package.json `exports` lists (no deep imports, no relative paths into another package), and
 * `@pemba/core`'s "." entry is runtime-neutral: it bundles with no Node built-in, so the Worker can import it as
 * it is.
 */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

const REPO = resolve(import.meta.dirname, "../../..");
/** Workspace packages: folder -> package name and its exported subpaths. */
const PACKAGES = [
  "packages/core",
  "packages/node-server",
  "packages/worker",
  "packages/sdk",
  "packages/console",
  "loadtest",
].map((dir) => {
  const manifest = JSON.parse(readFileSync(join(REPO, dir, "package.json"), "utf8")) as {
    name: string;
    exports?: Record<string, unknown>;
  };
  const files = Object.values(manifest.exports ?? {}).flatMap((target) =>
    typeof target === "string" ? [target] : Object.values(target as Record<string, string>),
  );
  return { dir, name: manifest.name, exports: Object.keys(manifest.exports ?? {}), files };
});

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === "node_modules" || entry === "dist" || entry.startsWith(".")) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|mts|mjs|js)$/.test(entry) && !entry.endsWith(".d.ts.map")) out.push(path);
  }
  return out;
}

/** A Node built-in module, with or without the `node:` prefix. */
const BUILTIN = new RegExp(`^(node:.*|${builtinModules.join("|")})(/.*)?$`);

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["']([^"']+)["']/g;

/** Every import specifier in the workspace that breaks the rule, as `file: specifier`. */
function crossPackageViolations(): string[] {
  const violations: string[] = [];
  for (const pkg of PACKAGES) {
    const root = join(REPO, pkg.dir);
    for (const file of sourceFiles(root)) {
      const text = readFileSync(file, "utf8");
      for (const match of text.matchAll(SPECIFIER)) {
        const spec = match[1]!;
        const where = `${relative(REPO, file)}: ${spec}`;
        if (spec.startsWith("@pemba/")) {
          const target = PACKAGES.find((p) => spec === p.name || spec.startsWith(`${p.name}/`));
          const subpath = target === undefined ? undefined : `.${spec.slice(target.name.length)}`;
          if (target === undefined || !target.exports.includes(subpath!)) violations.push(where);
        } else if (spec.startsWith(".")) {
          // into another package's folder (the repo root's own files, e.g. vitest.config.ts, belong to none)
          const resolved = `${resolve(dirname(file), spec)}${sep}`;
          const owner = PACKAGES.find((p) => resolved.startsWith(`${join(REPO, p.dir)}${sep}`));
          if (owner !== undefined && owner !== pkg) violations.push(where);
        }
      }
    }
  }
  return violations;
}

describe("package surface", () => {
  it("no import reaches into another package past its exports", () => {
    expect(crossPackageViolations()).toEqual([]);
  });

  it("the rule catches a deep import and a relative path into another package", () => {
    // the same matcher over a synthetic file list: guards the check itself against matching nothing
    const deep = ["@pemba", "core/store/d1"].join("/");
    const specs = [...`import { x } from "${deep}";\nimport "../../core/src/a.ts";`.matchAll(SPECIFIER)];
    expect(specs.map((m) => m[1])).toEqual(["@pemba/core/store/d1", "../../core/src/a.ts"]);
    const core = PACKAGES.find((p) => p.name === "@pemba/core")!;
    expect(core.exports).toEqual([".", "./node", "./testing", "./testing/node", "./testing/layers"]);
  });

  it("no entry of a package is a file of a test/ folder (scripts and other packages import entries)", () => {
    const intoTests = PACKAGES.flatMap((p) =>
      p.files.filter((f) => f.startsWith("./test/")).map((f) => `${p.dir}: ${f}`),
    );
    expect(PACKAGES.flatMap((p) => p.files)).toContain("./src/testing-node.ts");
    expect(intoTests).toEqual([]);
  });

  it('@pemba/core "." bundles without any Node built-in (static imports); "./node" needs them', async () => {
    expect(await nodeImportsOf("packages/core/src/index.ts")).toEqual([]);
    expect(await nodeImportsOf("packages/core/src/node.ts")).toContain(
      "packages/core/src/store/open.ts: node:fs",
    );
  });
});

/** The Node built-ins that bundling `entry` for workerd imports statically, as `importer: module`. */
async function nodeImportsOf(entry: string): Promise<string[]> {
  const nodeImports: string[] = [];
  await build({
    entryPoints: [join(REPO, entry)],
    bundle: true,
    write: false,
    platform: "neutral",
    format: "esm",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    logLevel: "silent",
    plugins: [
      {
        name: "node-builtins",
        setup(b) {
          b.onResolve({ filter: BUILTIN }, (args) => {
            // a dynamic import behind a runtime check (validation's file reader) is allowed; a static one is not
            if (args.kind !== "dynamic-import")
              nodeImports.push(`${relative(REPO, args.importer)}: ${args.path}`);
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  return nodeImports;
}
