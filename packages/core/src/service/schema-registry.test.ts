import { describe, expect, it } from "vitest";
import { compileSchema } from "../compile/index.ts";
import { parseSchema } from "../schema/index.ts";
import { MemoryStore } from "../store/memory.ts";
import { SchemaRegistry } from "./schema-registry.ts";

const TEXT = "entity user {}";
const definition = parseSchema(TEXT);
const compiled = compileSchema(definition);

describe("SchemaRegistry.cached", () => {
  it("finds each (tenant, version) it holds, whichever was asked for last", () => {
    const registry = new SchemaRegistry(new MemoryStore());
    const a1 = registry.remember("a", "v1", TEXT, definition, compiled);
    const a2 = registry.remember("a", "v2", TEXT, definition, compiled);
    const b1 = registry.remember("b", "v1", TEXT, definition, compiled);
    const asked: [string, string][] = [
      ["a", "v1"],
      ["a", "v1"],
      ["a", "v2"],
      ["b", "v1"],
      ["a", "v1"],
      ["b", "v2"],
      ["c", "v1"],
      ["b", "v1"],
    ];
    expect(asked.map(([t, v]) => registry.cached(t, v))).toEqual([
      a1,
      a1,
      a2,
      b1,
      a1,
      undefined,
      undefined,
      b1,
    ]);
  });

  it("forgets a deleted tenant's versions and evicted versions, even the one found last", () => {
    const registry = new SchemaRegistry(new MemoryStore(), { maxEntries: 1 });
    const a1 = registry.remember("a", "v1", TEXT, definition, compiled);
    expect(registry.cached("a", "v1")).toBe(a1);
    registry.forgetTenant("a");
    expect(registry.cached("a", "v1")).toBeUndefined();
    registry.remember("a", "v1", TEXT, definition, compiled);
    expect(registry.cached("a", "v1")).toBeDefined();
    const a2 = registry.remember("a", "v2", TEXT, definition, compiled); // evicts v1
    expect(registry.cached("a", "v1")).toBeUndefined();
    expect(registry.cached("a", "v2")).toBe(a2);
  });
});
