import { describe, expect, it } from "vitest";
import { compileSchema } from "../compile/index.ts";
import { parseSchema } from "../schema/index.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { estimatedBytes, HEAP_BYTES_PER_CHAR, SchemaRegistry } from "./schema-registry.ts";

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

  it("is bounded by the estimated bytes of its schemas, not only by their count", () => {
    const maxBytes = 16 * 1024 * 1024;
    const registry = new SchemaRegistry(new MemoryStore(), { maxBytes });
    // 30 schemas of 100,000 characters: 4 MB each by the estimate; only 4 fit in 16 MiB
    const large = `${TEXT}${" ".repeat(100_000 - TEXT.length)}`;
    expect(estimatedBytes(large, definition)).toBe(100_000 * HEAP_BYTES_PER_CHAR);
    for (let i = 0; i < 30; i++) {
      const r = registry.remember("t", `v${i}`, large, definition, compiled);
      expect(registry.cached("t", `v${i}`)).toBe(r);
      expect(registry.bytes).toBeLessThanOrEqual(maxBytes);
    }
    const kept = Array.from({ length: 30 }, (_, i) => registry.cached("t", `v${i}`) !== undefined);
    expect(kept.filter(Boolean)).toHaveLength(4);
    expect(kept.slice(26)).toEqual([true, true, true, true]); // the newest
    expect(registry.bytes).toBe(4 * estimatedBytes(large, definition));
    // a schema larger than the whole budget is answered but not kept (nothing is evicted for it)
    const huge = " ".repeat(Math.ceil(maxBytes / HEAP_BYTES_PER_CHAR) + 1);
    expect(registry.remember("t", "huge", huge, definition, compiled).version).toBe("huge");
    expect(registry.cached("t", "huge")).toBeUndefined();
    expect(registry.cached("t", "v29")).toBeDefined();
    // remembering a version again replaces it without counting it twice; forgetting a tenant frees its bytes
    registry.remember("t", "v29", large, definition, compiled);
    expect(registry.bytes).toBe(4 * estimatedBytes(large, definition));
    registry.forgetTenant("t");
    expect(registry.bytes).toBe(0);
  });
});
