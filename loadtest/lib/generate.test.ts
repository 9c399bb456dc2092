/**
 * The generator's answers are the engine's: every generated question, asked of a real Pemba app over HTTP after
 * writing the generated schema and data, gets exactly the generated decision; and the output is reproducible.
 */
import { startTestServer } from "@pemba/core/testing/node";
import { describe, expect, it } from "vitest";
import { type GeneratedCheck, generate, KINDS, typeName } from "./generate.ts";

describe("generate", () => {
  it("names types with letters only (Permify identifiers have no digits)", () => {
    expect([0, 1, 25, 26, 27, 701, 702].map(typeName)).toEqual([
      "res_a",
      "res_b",
      "res_z",
      "res_ba",
      "res_bb",
      "res_baz",
      "res_bba",
    ]);
  });

  it("is reproducible for a seed and differs across seeds", () => {
    const options = { entities: 3, ids: 40, kind: "mixed" as const, checks: 50, seed: 7 };
    expect(JSON.stringify(generate(options))).toBe(JSON.stringify(generate(options)));
    expect(JSON.stringify(generate({ ...options, seed: 8 }).tuples)).not.toBe(
      JSON.stringify(generate(options).tuples),
    );
  });

  it.each(KINDS)("kind %s: every generated decision is the engine's", async (kind) => {
    const generated = generate({ entities: 4, ids: 60, kind, checks: 300, seed: 3 });
    const decisions = new Set(generated.checks.map((c) => c.expected));
    expect(decisions).toEqual(new Set(["CHECK_RESULT_ALLOWED", "CHECK_RESULT_DENIED"]));
    if (kind === "attribute") expect(generated.attributes.length).toBe(4 * 60);
    if (kind === "nested") expect(generated.schema).toContain("relation parent @res_c");
    const server = await startTestServer();
    try {
      const schema = await server.call("/v1/tenants/t1/schemas/write", { schema: generated.schema });
      expect(schema.status).toBe(200);
      for (let i = 0; i < generated.tuples.length; i += 1000) {
        const w = await server.call("/v1/tenants/t1/data/write", {
          metadata: {},
          tuples: generated.tuples.slice(i, i + 1000),
        });
        expect(w.status).toBe(200);
      }
      if (generated.attributes.length > 0) {
        const w = await server.call("/v1/tenants/t1/data/write", {
          metadata: {},
          attributes: generated.attributes,
        });
        expect(w.status).toBe(200);
      }
      const wrong: (GeneratedCheck & { got: unknown })[] = [];
      for (const q of generated.checks) {
        const r = await server.call("/v1/tenants/t1/permissions/check", {
          metadata: { depth: 20 },
          entity: q.entity,
          permission: q.permission,
          subject: q.subject,
        });
        const got = (r.body as { can?: string }).can;
        if (got !== q.expected) wrong.push({ ...q, got });
      }
      expect(wrong).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
