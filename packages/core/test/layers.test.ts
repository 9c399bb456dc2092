/**
 * The layers of @pemba/core, from the bottom up. A file imports only its own layer and the layers of lower levels
 * (never a sibling layer of its own level, never a level above), and no import circle runs through core. Type-only
 * imports count; tests are exempt. docs/ARCHITECTURE.md's layer diagram is this table, rendered (the test fails
 * while they differ and prints the diagram to paste).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  cycles,
  describeLayers,
  importGraph,
  LayerTable,
  type Levels,
} from "../src/testing/import-layers.ts";

/** Core's layers by level, bottom first. */
const LEVELS: Levels = [
  [
    {
      name: "foundation",
      holds: ["errors.ts", "model.ts", "expiry.ts", "random.ts", "next-turn.ts", "shared-work.ts"],
      what: "errors, the data model, expiry times, seeded randomness, event-loop turns, work requests share",
    },
  ],
  [
    { name: "schema", holds: ["schema/"], what: "the schema language: parser, checker, printer, diff" },
    {
      name: "store",
      holds: ["store/"],
      what: "the storage contract and its implementations (store/layers.test.ts)",
    },
    { name: "wire", holds: ["wire/"], what: "Permify's JSON: zod shapes, model <-> wire conversions" },
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
      holds: ["index.ts", "node.ts", "testing.ts", "testing-node.ts", "testing/"],
      what: "the package entries; test support over the whole package (layer checks, the AuthZEN suite)",
    },
  ],
];

describeLayers("@pemba/core layers", {
  root: join(import.meta.dirname, "../src"),
  levels: LEVELS,
  minFiles: 200,
  diagram: "core",
});

describe("the layer checks", () => {
  it("catch an upward import (test support too), a sideways import, a file in no layer and a type-only circle", () => {
    const synthetic = new Map([
      ["engine/a.ts", 'import type { B } from "./b.ts";\nimport { s } from "../service/s.ts";\n'],
      ["engine/b.ts", 'export type { A } from "./a.ts";\n'],
      ["schema/c.ts", 'import { d } from "../store/d.ts";\n'],
      ["store/testing/e.ts", 'import { s } from "../../service/s.ts";\n'],
      ["service/s.ts", 'const m = await import("../http/m.ts");\n'],
      ["elsewhere.ts", ""],
    ]);
    const g = importGraph(synthetic);
    expect(new LayerTable(LEVELS).violations(g)).toEqual([
      "elsewhere.ts: in no layer",
      "engine/a.ts -> service/s.ts (engine -> service)",
      "schema/c.ts -> store/d.ts (schema -> store)",
      "service/s.ts -> http/m.ts (service -> http)",
      "store/testing/e.ts -> service/s.ts (store -> service)",
    ]);
    expect(cycles(g)).toEqual([["engine/a.ts", "engine/b.ts"]]);
  });

  it("hold workspace entries, top-level files by pattern, and layers that use only some lower ones", () => {
    const table = new LayerTable([
      [
        { name: "core", holds: ["@pemba/core"], what: "" },
        { name: "base", holds: ["*.ts"], what: "" },
      ],
      [{ name: "parts", holds: ["src/"], what: "", uses: ["base"] }],
      [{ name: "entry", holds: ["index.ts"], what: "" }],
      [{ name: "testing", holds: ["src/testing/", "@pemba/core/testing"], what: "" }],
    ]);
    const g = importGraph(
      new Map([
        ["index.ts", 'import "./src/a.ts";\nimport "@pemba/core";\nimport "@pemba/core/testing";\n'],
        [
          "src/a.ts",
          'import "./testing/t.ts";\nimport "@pemba/core";\nimport "../util.ts";\nimport "zod";\n',
        ],
        ["src/testing/t.ts", 'import "../a.ts";\nimport "@pemba/core/testing";\n'],
        ["util.ts", ""],
      ]),
    );
    expect(g.get("src/a.ts")).toEqual(["src/testing/t.ts", "util.ts", "@pemba/core"]);
    expect(table.layerOf("util.ts")).toBe("base");
    expect(table.layerOf("index.ts")).toBe("entry");
    expect(table.violations(g)).toEqual([
      "index.ts -> @pemba/core/testing (entry -> testing)",
      "src/a.ts -> @pemba/core (parts -> core)",
      "src/a.ts -> src/testing/t.ts (parts -> testing)",
    ]);
    expect(() => new LayerTable([[{ name: "a", holds: [], what: "", uses: ["b"] }]])).toThrow(
      /not a layer below/,
    );
  });
});
