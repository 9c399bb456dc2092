/**
 * The layers of @pemba/core, from the bottom up. A file imports only its own layer and the layers of lower levels
 * (never a sibling layer of its own level, never a level above), and no import circle runs through core. Type-only
 * imports count; tests are exempt. docs/ARCHITECTURE.md's layer diagram is this table, rendered (the test fails
 * while they differ and prints the diagram to paste).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cycles, importGraph, sourcesUnder } from "./import-graph.ts";

interface Layer {
  name: string;
  /** Files and folders (ending in "/") inside src/; the longest match wins. */
  holds: string[];
  what: string;
}

/** Core's layers by level, bottom first. */
const LEVELS: Layer[][] = [
  [
    {
      name: "foundation",
      holds: ["errors.ts", "model.ts", "expiry.ts", "random.ts", "next-turn.ts"],
      what: "errors, the data model, expiry times, seeded randomness, event-loop turns",
    },
  ],
  [
    { name: "schema", holds: ["schema/"], what: "the schema language: parser, checker, printer, diff" },
    {
      name: "store",
      holds: ["store/"],
      what: "the storage contract and its implementations (store/layers.test.ts)",
    },
    { name: "wire", holds: ["http/wire/"], what: "Permify's JSON: zod shapes, model <-> wire conversions" },
  ],
  [{ name: "rules", holds: ["rules/"], what: "CEL rule bodies" }],
  [{ name: "compile", holds: ["compile/"], what: "schema -> closures, the reverse graph" }],
  [{ name: "engine", holds: ["engine/"], what: "check, expand, lookups, explain (model values)" }],
  [{ name: "observe", holds: ["observe/"], what: "tracing and the decision log" }],
  [
    {
      name: "service",
      holds: ["service/"],
      what: "PembaService: schemas, snap tokens, watch, bundles, diffs",
    },
  ],
  [
    { name: "dump", holds: ["dump/"], what: "tenant dumps: export and import" },
    { name: "authzen", holds: ["authzen/"], what: "the AuthZEN API over the service" },
    { name: "validation", holds: ["validation/"], what: "Permify validation files: load, run, upload" },
  ],
  [{ name: "http", holds: ["http/"], what: "route table, pipeline, routes, auth, the app" }],
  [{ name: "grpc", holds: ["grpc/"], what: "Permify's gRPC services over the route table" }],
  [{ name: "settings", holds: ["settings/"], what: "the one settings definition, resolution, docs" }],
  [
    {
      name: "create-pemba",
      holds: ["create-pemba.ts"],
      what: "store -> replica -> service -> app, wired once",
    },
  ],
  [
    {
      name: "entries",
      holds: ["index.ts", "node.ts", "testing.ts", "testing-node.ts", "*/testing/", "store/contract/"],
      what: "the package entries; test support (every testing/ folder, the store contract suite)",
    },
  ],
];

const LAYERS = LEVELS.flat();
const LEVEL = new Map(LEVELS.flatMap((level, i) => level.map((l) => [l.name, i] as const)));

/** A file's layer: the layer holding the longest prefix of its path ("*" matches one folder). */
function layerOf(path: string): string | undefined {
  let best: { name: string; length: number } | undefined;
  for (const layer of LAYERS) {
    for (const hold of layer.holds) {
      const prefix = hold.startsWith("*/") ? `${path.split("/")[0]}/${hold.slice(2)}` : hold;
      const matches = hold.endsWith("/") ? path.startsWith(prefix) : path === prefix;
      if (matches && (best === undefined || prefix.length > best.length))
        best = { name: layer.name, length: prefix.length };
    }
  }
  return best?.name;
}

/** `importer -> imported (layer -> layer)` for every import upward or sideways, and every file in no layer. */
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
      if (to === from) continue;
      if (to === undefined || LEVEL.get(to)! >= LEVEL.get(from)!)
        out.push(`${path} -> ${target} (${from} -> ${to})`);
    }
  }
  return out.sort();
}

/**
 * The diagram in docs/ARCHITECTURE.md: the levels, top first, each layer with what it holds and does; layers of one
 * level side by side do not import each other.
 */
function diagram(): string {
  const out: string[] = [];
  for (let i = LEVELS.length - 1; i >= 0; i--) {
    LEVELS[i]!.forEach((l, j) => {
      const level = j === 0 ? String(i) : "";
      out.push(`${level.padEnd(3)}${l.name.padEnd(14)}${l.holds.join(" ")}`);
      out.push(`${"".padEnd(17)}${l.what}`);
    });
  }
  return out.join("\n");
}

const SRC = join(import.meta.dirname, "../src");
const DIAGRAM_START = "<!-- core layers: packages/core/test/layers.test.ts -->";

describe("@pemba/core layers", () => {
  const graph = importGraph(sourcesUnder(SRC));

  it("every import goes to the file's own layer or a lower level", () => {
    expect(graph.size).toBeGreaterThan(200);
    expect(layerViolations(graph)).toEqual([]);
  });

  it("no import circle", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("no import circle in any other package of the workspace", () => {
    const packages = join(import.meta.dirname, "../..");
    const found: Record<string, string[][]> = {};
    for (const dir of ["node-server/src", "worker/src", "console/app", "console/src", "sdk/src"]) {
      const g = importGraph(sourcesUnder(join(packages, dir)));
      expect(g.size, dir).toBeGreaterThan(0);
      found[dir] = cycles(g);
    }
    expect(found).toEqual({
      "node-server/src": [],
      "worker/src": [],
      "console/app": [],
      "console/src": [],
      "sdk/src": [],
    });
  });

  it("catches an upward import, a sideways import, a file in no layer and a type-only circle", () => {
    const synthetic = new Map([
      ["engine/a.ts", 'import type { B } from "./b.ts";\nimport { s } from "../service/s.ts";\n'],
      ["engine/b.ts", 'export type { A } from "./a.ts";\n'],
      ["schema/c.ts", 'import { d } from "../store/d.ts";\n'],
      ["store/testing/e.ts", 'import { s } from "../../service/s.ts";\n'],
      ["service/s.ts", 'const m = await import("../http/m.ts");\n'],
      ["elsewhere.ts", ""],
    ]);
    const g = importGraph(synthetic);
    expect(layerViolations(g)).toEqual([
      "elsewhere.ts: in no layer",
      "engine/a.ts -> service/s.ts (engine -> service)",
      "schema/c.ts -> store/d.ts (schema -> store)",
      "service/s.ts -> http/m.ts (service -> http)",
    ]);
    expect(cycles(g)).toEqual([["engine/a.ts", "engine/b.ts"]]);
  });

  it("docs/ARCHITECTURE.md shows these layers", () => {
    const doc = readFileSync(join(import.meta.dirname, "../../../docs/ARCHITECTURE.md"), "utf8");
    const start = doc.indexOf(DIAGRAM_START);
    expect(start, `docs/ARCHITECTURE.md has no line ${DIAGRAM_START}`).toBeGreaterThan(0);
    const block = /```\n([\s\S]*?)\n```/.exec(doc.slice(start))?.[1];
    expect(block, `the diagram after ${DIAGRAM_START}, to paste:\n${diagram()}`).toBe(diagram());
  });
});
