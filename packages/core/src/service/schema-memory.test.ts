/**
 * The compiled schemas a service keeps stay within their budget, measured on the heap after full
 * collections (not by the registry's own estimate). 30 distinct CEL-heavy schemas at the write limits, on a
 * MemoryStore with an 8 MiB budget, grow the heap by at most the budget plus a stated baseline; rule schemas of
 * 0.45 MiB are refused before they are parsed.
 */
import v8 from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../store/memory/memory-store.ts";
import { PembaService } from "./pemba-service.ts";
import { MAX_SCHEMA_BYTES } from "./schema-limits.ts";
import { celHeavySchema, entitiesSchema } from "./testing/limit-schemas.ts";

v8.setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const held = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

const MiB = 1024 * 1024;
const BUDGET = 8 * MiB;
/**
 * What the service holds besides the compiled schemas: the MemoryStore's copy of the 30 texts (under 8 KiB each),
 * the version list, the head entries and the registry's map: 2 MiB is several times that.
 */
const BASELINE = 2 * MiB;

describe("compiled schemas kept in memory", () => {
  it(`30 CEL-heavy schemas grow the heap by less than the ${BUDGET / MiB} MiB budget + ${BASELINE / MiB} MiB`, async () => {
    const service = new PembaService(new MemoryStore(), { maxCompiledSchemaBytes: BUDGET });
    await service.writeSchema("t1", "entity user {}");
    const texts = Array.from({ length: 30 }, (_, i) => celHeavySchema(1000 + i));
    const before = held();
    for (const text of texts) await service.writeSchema("t1", text);
    const grown = held() - before;
    expect(service.schemas.bytes).toBeLessThanOrEqual(BUDGET);
    expect(grown).toBeLessThan(BUDGET + BASELINE);
    // every version still answers: an evicted one is compiled again when asked for
    const versions = (await service.listSchemas("t1", 100, "")).schemas.map((s) => s.version);
    const oldest = await service.readSchema("t1", versions.at(-2)!);
    expect(Object.keys(oldest.definition.rules)).toHaveLength(
      Object.keys((await service.readSchema("t1", versions[0]!)).definition.rules).length,
    );
  });

  // The estimate by kind (40 bytes per character of entities, 100 per character of rule bodies) is at
  // least what each kind of schema at the limits really holds, and not so loose that the budget keeps far less
  // than it says (measured: 0.6 of the estimate for entities, 0.85 for CEL + entities, 0.65 for CEL alone).
  for (const [kind, make] of [
    ["64 KiB of entities", (salt: number) => entitiesSchema(salt)],
    ["8 KiB of CEL + entities to 64 KiB", (salt: number) => celHeavySchema(salt, MAX_SCHEMA_BYTES)],
    ["8 KiB of CEL", (salt: number) => celHeavySchema(salt)],
  ] as const) {
    it(`the estimate covers the heap kept by 12 schemas of ${kind}`, async () => {
      const service = new PembaService(new MemoryStore(), { maxCompiledSchemaBytes: 1024 * MiB });
      await service.writeSchema("t1", "entity user {}");
      const texts = Array.from({ length: 12 }, (_, i) => make(2000 + i));
      const before = held();
      for (const text of texts) await service.writeSchema("t1", text);
      const grown = held() - before;
      // the MemoryStore keeps every version's text besides the registry (one byte per character)
      const stored = texts.reduce((sum, t) => sum + t.length, 0);
      expect(grown).toBeLessThan(service.schemas.bytes + stored);
      expect(grown).toBeGreaterThan(0.4 * service.schemas.bytes);
    });
  }

  it("the issue's 0.45 MiB rule schemas are refused before parsing and leave the heap as it was", async () => {
    const service = new PembaService(new MemoryStore(), { maxCompiledSchemaBytes: 16 * MiB });
    await service.writeSchema("t1", "entity user {}");
    const before = held();
    for (let i = 0; i < 8; i++) {
      const body = Array.from({ length: 50_000 }, (_, j) => `x > ${i + j}`).join(" && ");
      const text = `entity user {}\nentity doc {\n attribute x integer\n}\nrule r(x integer) {\n ${body}\n}\n`;
      expect(text.length).toBeGreaterThan(0.45 * MiB);
      await expect(service.writeSchema("t1", text)).rejects.toMatchObject({
        code: "ERROR_CODE_VALIDATION",
        message: `invalid SchemaWriteRequest.Schema: value length must be at most ${MAX_SCHEMA_BYTES} bytes`,
      });
    }
    expect(held() - before).toBeLessThan(BASELINE);
    expect(service.schemas.bytes).toBeLessThan(1024);
  });
});
