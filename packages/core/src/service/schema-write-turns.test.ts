/**
 * A schema write gives the event loop back between its parts (the lexer, the parser, each rule, the rest): work
 * queued while it runs (other tenants' requests) runs before it ends, instead of after one long synchronous block.
 */
import { describe, expect, it } from "vitest";
import { lexSchema, parseLexedSchema, parseRawSchema } from "../schema/parser.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { PembaService } from "./pemba-service.ts";
import { MAX_SCHEMA_BYTES } from "./schema-limits.ts";
import { celHeavySchema, entitiesSchema } from "./testing/limit-schemas.ts";

/** How many times a callback re-queued with setImmediate ran while `work` was pending. */
async function turnsDuring(work: () => Promise<unknown>): Promise<number> {
  let ran = 0;
  let pending = true;
  const tick = () => {
    if (!pending) return;
    ran++;
    setImmediate(tick);
  };
  setImmediate(tick);
  await work();
  pending = false;
  return ran;
}

describe("schema write turns", () => {
  it("callbacks queued during a write of N rules run at least N + 1 times before it answers", async () => {
    const service = new PembaService(new MemoryStore());
    const text = celHeavySchema(7);
    const rules = [...text.matchAll(/^rule /gm)].length;
    expect(rules).toBeGreaterThan(5);
    let version = "";
    const ran = await turnsDuring(async () => {
      version = await service.writeSchema("t1", text);
    });
    expect(version).toMatch(/^[0-9a-v]{20}$/);
    expect(ran).toBeGreaterThanOrEqual(rules + 1);
  });

  it("a 64 KiB schema without rules is lexed, parsed and compiled in three turns", async () => {
    const service = new PembaService(new MemoryStore());
    const text = entitiesSchema(7, MAX_SCHEMA_BYTES);
    const ran = await turnsDuring(() => service.writeSchema("t1", text));
    expect(ran).toBeGreaterThanOrEqual(3);
    // the written schema is the one a single-turn parse reads
    const written = await service.readSchema("t1", "");
    expect(Object.keys(written.definition.entities)).toHaveLength(
      parseRawSchema(text).statements.filter((s) => s.kind === "entity").length,
    );
  });

  it("a partial write parses its printed schema in turns too", async () => {
    const service = new PembaService(new MemoryStore());
    await service.writeSchema("t1", entitiesSchema(7, MAX_SCHEMA_BYTES / 2));
    const ran = await turnsDuring(() =>
      service.partialWriteSchema("t1", "", {
        user: { write: ["relation friend @user"], update: [], delete: [] },
      }),
    );
    expect(ran).toBeGreaterThanOrEqual(3);
    expect(Object.keys((await service.readSchema("t1", "")).definition.entities.user!.relations)).toEqual([
      "friend",
    ]);
  });

  it("parsing tokens lexed earlier gives the same tree and the same errors as parsing the text", () => {
    const good = celHeavySchema(3, 4096);
    expect(parseLexedSchema(lexSchema(good))).toEqual(parseRawSchema(good));
    const bad = "entity user {}\nentity doc {\n relation owner @user\n permission view = owner or\n}\n";
    const message = "6:2:no prefix parse function for RCB found";
    expect(() => parseRawSchema(bad)).toThrow(message);
    expect(() => parseLexedSchema(lexSchema(bad))).toThrow(message);
  });
});
