/**
 * A schema write gives the event loop back between its parts (the parse, each rule, the rest): work queued while it
 * runs (other tenants' requests) runs before it ends, instead of after one long synchronous block.
 */
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { PembaService } from "./pemba-service.ts";
import { celHeavySchema } from "./testing/limit-schemas.ts";

describe("schema write turns", () => {
  it("callbacks queued during a write of N rules run at least N + 1 times before it answers", async () => {
    const service = new PembaService(new MemoryStore());
    const text = celHeavySchema(7);
    const rules = [...text.matchAll(/^rule /gm)].length;
    expect(rules).toBeGreaterThan(5);
    let ran = 0;
    let writing = true;
    const tick = () => {
      if (!writing) return;
      ran++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const version = await service.writeSchema("t1", text);
    writing = false;
    expect(version).toMatch(/^[0-9a-v]{20}$/);
    expect(ran).toBeGreaterThanOrEqual(rules + 1);
  });
});
