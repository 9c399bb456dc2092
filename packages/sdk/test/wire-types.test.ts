/**
 * The SDK's request/response types are generated from the server's zod wire schemas; this fails when
 * src/wire.gen.ts and the schemas drift apart (run `node packages/sdk/scripts/wire-types.ts` to regenerate).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generateWireTypes, WIRE_TYPES_FILE } from "../scripts/wire-types.ts";

describe("generated wire types", () => {
  const committed = readFileSync(WIRE_TYPES_FILE, "utf8");

  it("src/wire.gen.ts is what the current wire schemas generate", () => {
    expect(committed).toBe(generateWireTypes());
  });

  it("fields the server requires are required, defaulted ones optional, all attribute value forms present", () => {
    const block = (name: string) => {
      const match = new RegExp(`export interface ${name} \\{\\n([\\s\\S]*?)\\n\\}`).exec(committed);
      if (match === null) throw new Error(`no interface ${name}`);
      return match[1];
    };
    expect(block("DataDeleteRequest")).toBe(
      "  tuple_filter: TupleFilter;\n  attribute_filter: AttributeFilter;",
    );
    expect(block("Subject")).toBe("  type: string;\n  id: string;\n  relation?: string;");
    expect(block("PermissionCheckRequestMetadata")).toBe(
      "  schema_version?: string;\n  snap_token?: string;\n  depth: number;",
    );
    for (const form of ["boolean_array", "string_array", "integer_array", "double_array"]) {
      expect(block("AttributeValue")).toContain(`  ${form}?: `);
    }
    // Every endpoint's request and response message has a type.
    for (const name of [
      "TenantCreateRequest",
      "TenantListResponse",
      "SchemaPartialWriteRequest",
      "SchemaReadResponse",
      "SchemaListResponse",
      "AttributeReadRequest",
      "AttributeReadResponse",
      "BundleWriteRequest",
      "BundleReadResponse",
      "PermissionBulkCheckRequest",
      "PermissionLookupEntityStreamResponse",
      "WatchRequest",
      "WatchResponse",
    ]) {
      expect(committed).toMatch(new RegExp(`export (interface|type) ${name}\\b`));
    }
  });
});
