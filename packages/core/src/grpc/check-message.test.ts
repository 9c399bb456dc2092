import { create, fromBinary, fromJson, type JsonObject, toBinary, toJson } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkReading, K6_CHECK } from "../http/testing/check-reading.ts";
import { PermissionCheckRequestSchema as CheckRequestWire } from "../wire/permission.ts";
import { parseWire } from "../wire/pgv.ts";
import { decodeCheckRequest, encodeCheckResponseFrame } from "./check-message.ts";
import { ContextSchema } from "./gen/base/v1/base_pb.js";
import { PermissionCheckRequestSchema, PermissionCheckResponseSchema } from "./gen/base/v1/service_pb.js";
import { typeRegistry } from "./type-registry.ts";

type Reading = { tenantId: string; meta: unknown; query: unknown } | "refused";

/**
 * What the general path makes of a message's bytes: the message, its proto3 JSON, then zod (the definition of a
 * valid request); "refused" when any step throws or the request has a context or arguments (never decoded
 * directly).
 */
function generalReading(bytes: Uint8Array): Reading {
  try {
    const message = fromBinary(PermissionCheckRequestSchema, bytes);
    const json = toJson(PermissionCheckRequestSchema, message, {
      useProtoFieldName: true,
      registry: typeRegistry,
    }) as JsonObject;
    const tenantId = (json.tenant_id as string | undefined) ?? "";
    delete json.tenant_id;
    const r = parseWire(CheckRequestWire, json);
    if (r.context !== undefined || r.arguments.length > 0) return "refused";
    return { tenantId, ...checkReading(r) };
  } catch {
    return "refused";
  }
}

function directReading(bytes: Uint8Array): Reading {
  const decoded = decodeCheckRequest(bytes);
  return decoded === undefined ? "refused" : { tenantId: decoded.tenantId, ...decoded.check };
}

const K6_MESSAGE = fromJson(PermissionCheckRequestSchema, { tenant_id: "t1", ...K6_CHECK });

const name = fc.oneof(
  fc.constantFrom("user", "document", "view", "owner", "_x", "", "a b", "é", "A".repeat(64), "a".repeat(65)),
  fc.string({ maxLength: 8 }),
);
const id = fc.oneof(
  fc.constantFrom(
    "1",
    "*",
    "alice@example.com",
    "a:b+c.d-e_f",
    "",
    "**",
    "a/b",
    "x".repeat(128),
    "x".repeat(129),
  ),
  fc.string({ maxLength: 8 }),
);
const messages = fc
  .record({
    tenantId: fc.constantFrom("t1", "", "bad tenant"),
    metadata: fc.option(
      fc.record({
        schemaVersion: fc.constantFrom("", "v1"),
        snapToken: fc.constantFrom("", "tok"),
        depth: fc.constantFrom(0, 2, 3, 20, -1, 2147483647),
      }),
      { nil: undefined },
    ),
    entity: fc.option(fc.record({ type: name, id }), { nil: undefined }),
    permission: name,
    subject: fc.option(fc.record({ type: name, id, relation: fc.oneof(fc.constant(""), name) }), {
      nil: undefined,
    }),
    context: fc.option(fc.constant(create(ContextSchema, { data: { fields: {} } })), { nil: undefined }),
  })
  .map((init) => toBinary(PermissionCheckRequestSchema, create(PermissionCheckRequestSchema, init)));

describe("decodeCheckRequest", () => {
  it("decodes the load test's message directly, as the general path reads it", () => {
    const bytes = toBinary(PermissionCheckRequestSchema, K6_MESSAGE);
    expect(directReading(bytes)).not.toBe("refused");
    expect(directReading(bytes)).toEqual(generalReading(bytes));
  });

  it("property: whatever it decodes, the general path reads the same (generated and mutated messages)", () => {
    fc.assert(
      fc.property(messages, (bytes) => {
        const direct = directReading(bytes);
        if (direct !== "refused") expect(direct).toEqual(generalReading(bytes));
      }),
      { numRuns: 3000 },
    );
    const mutated = fc
      .tuple(messages, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }))
      .map(([bytes, edits]) => {
        const out = Uint8Array.from(bytes);
        for (const [at, value] of edits) if (out.length > 0) out[at % out.length] = value;
        return out;
      });
    fc.assert(
      fc.property(mutated, (bytes) => {
        const direct = directReading(bytes);
        if (direct !== "refused") expect(direct).toEqual(generalReading(bytes));
      }),
      { numRuns: 3000 },
    );
  });

  it("leaves a context, a repeated field and a negative depth to the general path", () => {
    const withContext = create(PermissionCheckRequestSchema, {
      ...K6_MESSAGE,
      context: create(ContextSchema, { tuples: [] }),
    });
    expect(decodeCheckRequest(toBinary(PermissionCheckRequestSchema, withContext))).toBeUndefined();
    const once = toBinary(PermissionCheckRequestSchema, K6_MESSAGE);
    const permissionTwice = new Uint8Array([...once, 0x22, 0x04, ...new TextEncoder().encode("edit")]);
    expect(generalReading(permissionTwice)).not.toBe("refused"); // the last one wins there
    expect(decodeCheckRequest(permissionTwice)).toBeUndefined();
    const negative = create(PermissionCheckRequestSchema, {
      ...K6_MESSAGE,
      metadata: { ...K6_MESSAGE.metadata!, depth: -5 },
    });
    expect(decodeCheckRequest(toBinary(PermissionCheckRequestSchema, negative))).toBeUndefined();
  });

  it("reads text up to 1,024 bytes and leaves a longer one to the general path", () => {
    const tenant = (tenantId: string) =>
      decodeCheckRequest(
        toBinary(
          PermissionCheckRequestSchema,
          create(PermissionCheckRequestSchema, { ...K6_MESSAGE, tenantId }),
        ),
      )?.tenantId;
    expect(tenant("t".repeat(1024))).toBe("t".repeat(1024));
    expect(tenant("t".repeat(1025))).toBeUndefined();
    expect(tenant("x".repeat(100_000))).toBeUndefined();
  });
});

describe("encodeCheckResponseFrame", () => {
  it("writes the bytes toBinary writes, length-prefixed", () => {
    for (const can of ["CHECK_RESULT_ALLOWED", "CHECK_RESULT_DENIED", "CHECK_RESULT_UNSPECIFIED"] as const) {
      for (const checkCount of [0, 1, 127, 128, 16383, 16384, 2097152, 2147483647]) {
        const message = create(PermissionCheckResponseSchema, {
          can: { CHECK_RESULT_UNSPECIFIED: 0, CHECK_RESULT_ALLOWED: 1, CHECK_RESULT_DENIED: 2 }[can],
          metadata: { checkCount },
        });
        const bytes = toBinary(PermissionCheckResponseSchema, message);
        const frame = encodeCheckResponseFrame(can, checkCount)!;
        expect([...frame]).toEqual([0, 0, 0, 0, bytes.length, ...bytes]);
      }
    }
    expect(encodeCheckResponseFrame("CHECK_RESULT_MAYBE", 1)).toBeUndefined();
    expect(encodeCheckResponseFrame("CHECK_RESULT_ALLOWED", -1)).toBeUndefined();
  });
});
