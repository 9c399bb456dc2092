/**
 * store/'s layers, from the bottom: the contract (store.ts, types.ts, capabilities.ts and the helpers beside them)
 * <- memory/ and sql/ <- drivers/ and proxies/ <- open.ts. Drivers build on sql/ only, and proxies see the database
 * through capabilities.ts, never drivers/ or sql/. No import circle runs through store/. Type-only imports count.
 * Tests are exempt: they wire drivers to proxies.
 */
import { describe, expect, it } from "vitest";
import { cycles, describeLayers, importGraph, LayerTable, type Levels } from "../testing/import-layers.ts";

const LEVELS: Levels = [
  [{ name: "base", holds: ["*.ts"], what: "the storage contract, capabilities and the helpers beside them" }],
  [
    { name: "memory", holds: ["memory/"], what: "the in-memory store" },
    { name: "sql", holds: ["sql/"], what: "SQL plans and dialects" },
    { name: "testing", holds: ["testing/"], what: "test servers and fixtures" },
  ],
  [
    { name: "drivers", holds: ["drivers/"], what: "SQLite, libSQL, PostgreSQL, D1", uses: ["base", "sql"] },
    { name: "proxies", holds: ["proxies/"], what: "stores over a store", uses: ["base", "memory"] },
    { name: "contract", holds: ["contract/"], what: "the contract suite", uses: ["base", "testing"] },
  ],
  [{ name: "open", holds: ["open.ts"], what: "a store from its settings" }],
];

describeLayers("store/ layers", {
  root: import.meta.dirname,
  levels: LEVELS,
  minFiles: 30,
  diagram: "store",
});

describe("store/ layer table", () => {
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
    expect(new LayerTable(LEVELS).violations(g)).toEqual([
      "drivers/a.ts -> proxies/b.ts (drivers -> proxies)",
      "elsewhere/e.ts: in no layer",
      "proxies/c.ts -> sql/s.ts (proxies -> sql)",
      "sql/s.ts -> memory/m.ts (sql -> memory)",
    ]);
    expect(cycles(g)).toEqual([["proxies/b.ts", "proxies/c.ts"]]);
  });
});
