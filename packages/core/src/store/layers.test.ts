/**
 * store/'s layers, from the bottom: the contract (store.ts, types.ts, capabilities.ts and the helpers beside them)
 * <- memory/ and sql/ <- drivers/ <- proxies/ <- open.ts. A file imports only from its own layer or one its layer
 * builds on (proxies/ see the database through capabilities.ts, never drivers/ or sql/), and no import circle runs
 * through store/. Type-only imports count. Tests are exempt: they wire drivers to proxies.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, posix, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

type Layer = "base" | "memory" | "sql" | "drivers" | "proxies" | "open" | "contract" | "testing";

/** Which layers each layer may import from (its own included). */
const MAY_IMPORT: Record<Layer, Layer[]> = {
  base: ["base"],
  memory: ["base", "memory"],
  sql: ["base", "sql"],
  drivers: ["base", "sql", "drivers"],
  proxies: ["base", "memory", "proxies"],
  open: ["base", "memory", "sql", "drivers", "proxies", "open"],
  contract: ["base", "testing", "contract"],
  testing: ["base", "testing"],
};

/** A file's layer from its path inside store/ ("drivers/d1.ts"); undefined for a folder no layer owns. */
function layerOf(path: string): Layer | undefined {
  const [top, ...rest] = path.split("/");
  if (rest.length === 0) return top === "open.ts" ? "open" : "base";
  return (["memory", "sql", "drivers", "proxies", "contract", "testing"] as const).find((l) => l === top);
}

/** The store/ files each file imports (statically, dynamically, type-only or re-exported), by path inside store/. */
function importGraph(files: Map<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const [path, text] of files) {
    const targets = ts
      .preProcessFile(text, true, true)
      .importedFiles.map((f) => f.fileName)
      .filter((spec) => spec.startsWith("."))
      .map((spec) => posix.normalize(posix.join(posix.dirname(path), spec)))
      .filter((target) => !target.startsWith(".."));
    graph.set(path, targets);
  }
  return graph;
}

/** `importer -> imported` for every import that breaks the layering (or a file outside every layer). */
function layerViolations(graph: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [path, targets] of graph) {
    const from = layerOf(path);
    if (from === undefined) {
      out.push(`${path}: in no layer`);
      continue;
    }
    for (const target of targets) {
      const to = layerOf(target);
      if (to === undefined || !MAY_IMPORT[from].includes(to)) out.push(`${path} -> ${target}`);
    }
  }
  return out.sort();
}

/** The import circles: every strongly connected set of files (Tarjan), each sorted, smallest first. */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (path: string) => {
    index.set(path, index.size);
    low.set(path, index.get(path)!);
    stack.push(path);
    for (const next of graph.get(path) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(path, Math.min(low.get(path)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(path, Math.min(low.get(path)!, index.get(next)!));
    }
    if (low.get(path) !== index.get(path)) return;
    const component: string[] = [];
    let top: string;
    do {
      top = stack.pop()!;
      component.push(top);
    } while (top !== path);
    if (component.length > 1 || graph.get(path)?.includes(path)) out.push(component.sort());
  };
  for (const path of graph.keys()) if (!index.has(path)) visit(path);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

const STORE = import.meta.dirname;

function storeSources(dir = STORE): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) for (const [p, text] of storeSources(path)) files.set(p, text);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts")) {
      files.set(relative(STORE, path).split("\\").join("/"), readFileSync(path, "utf8"));
    }
  }
  return files;
}

describe("store/ layers", () => {
  const graph = importGraph(storeSources());

  it("every import goes to the file's own layer or one below it", () => {
    expect(graph.size).toBeGreaterThan(30);
    expect(layerViolations(graph)).toEqual([]);
  });

  it("no import circle", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("catches a driver importing a proxy, a proxy importing SQL, a file in no layer and a type-only circle", () => {
    const synthetic = new Map([
      ["drivers/a.ts", '/** not this: import "../proxies/x.ts" */\nimport { b } from "../proxies/b.ts";\n'],
      ["proxies/b.ts", 'import type { C } from "./c.ts";\nexport const b = 1;\n'],
      ["proxies/c.ts", 'export type { B } from "./b.ts";\nconst s = await import("../sql/s.ts");\n'],
      ["sql/s.ts", 'import { m } from "../../model.ts";\nimport "../memory/m.ts";\n'],
      ["elsewhere/e.ts", ""],
    ]);
    const g = importGraph(synthetic);
    expect(g.get("drivers/a.ts")).toEqual(["proxies/b.ts"]);
    expect(layerViolations(g)).toEqual([
      "drivers/a.ts -> proxies/b.ts",
      "elsewhere/e.ts: in no layer",
      "proxies/c.ts -> sql/s.ts",
      "sql/s.ts -> memory/m.ts",
    ]);
    expect(cycles(g)).toEqual([["proxies/b.ts", "proxies/c.ts"]]);
  });
});
