/**
 * store/'s layers, from the bottom: the contract (store.ts, types.ts, capabilities.ts and the helpers beside them)
 * <- memory/ and sql/ <- drivers/ <- proxies/ <- open.ts. A file imports only from its own layer or one its layer
 * builds on (proxies/ see the database through capabilities.ts, never drivers/ or sql/), and no import circle runs
 * through store/. Type-only imports count. Tests are exempt: they wire drivers to proxies.
 */
import { describe, expect, it } from "vitest";
import { cycles, importGraph, sourcesUnder } from "../../test/import-graph.ts";

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

const STORE = import.meta.dirname;

describe("store/ layers", () => {
  const graph = importGraph(sourcesUnder(STORE));

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
