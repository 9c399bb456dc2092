import { describe, expect, it } from "vitest";
import type { PembaError } from "../errors.ts";
import { attributeValueFromWire, attributeValueToWire } from "./convert.ts";

const any = (message: string, data: unknown) => ({ "@type": `type.googleapis.com/base.v1.${message}`, data });
const errorOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as PembaError).toJSON();
  }
  throw new Error("expected an error");
};

describe("attribute values on the wire", () => {
  it("Permify's Any form, every type", () => {
    expect(attributeValueFromWire(any("BooleanValue", true))).toEqual({
      type: "ATTRIBUTE_TYPE_BOOLEAN",
      data: true,
    });
    expect(attributeValueFromWire(any("StringValue", "x"))).toEqual({
      type: "ATTRIBUTE_TYPE_STRING",
      data: "x",
    });
    expect(attributeValueFromWire(any("IntegerValue", 3))).toEqual({
      type: "ATTRIBUTE_TYPE_INTEGER",
      data: 3,
    });
    expect(attributeValueFromWire(any("IntegerValue", "42"))).toEqual({
      type: "ATTRIBUTE_TYPE_INTEGER",
      data: 42,
    });
    expect(attributeValueFromWire(any("DoubleValue", 1.5))).toEqual({
      type: "ATTRIBUTE_TYPE_DOUBLE",
      data: 1.5,
    });
    expect(attributeValueFromWire(any("BooleanArrayValue", [true, false]))).toEqual({
      type: "ATTRIBUTE_TYPE_BOOLEAN_ARRAY",
      data: [true, false],
    });
    expect(attributeValueFromWire(any("StringArrayValue", ["a", "b"]))).toEqual({
      type: "ATTRIBUTE_TYPE_STRING_ARRAY",
      data: ["a", "b"],
    });
    expect(attributeValueFromWire(any("IntegerArrayValue", [1, 2]))).toEqual({
      type: "ATTRIBUTE_TYPE_INTEGER_ARRAY",
      data: [1, 2],
    });
    expect(attributeValueFromWire(any("DoubleArrayValue", [0.5]))).toEqual({
      type: "ATTRIBUTE_TYPE_DOUBLE_ARRAY",
      data: [0.5],
    });
  });

  it("a missing data field is the proto3 zero value", () => {
    expect(attributeValueFromWire({ "@type": "type.googleapis.com/base.v1.BooleanValue" })).toEqual({
      type: "ATTRIBUTE_TYPE_BOOLEAN",
      data: false,
    });
    expect(attributeValueFromWire(any("StringArrayValue", undefined))).toEqual({
      type: "ATTRIBUTE_TYPE_STRING_ARRAY",
      data: [],
    });
  });

  it("the short forms of Permify's seed script (and arrays)", () => {
    expect(attributeValueFromWire({ boolean: true })).toEqual({ type: "ATTRIBUTE_TYPE_BOOLEAN", data: true });
    expect(attributeValueFromWire({ string: "x" })).toEqual({ type: "ATTRIBUTE_TYPE_STRING", data: "x" });
    expect(attributeValueFromWire({ integer: 3 })).toEqual({ type: "ATTRIBUTE_TYPE_INTEGER", data: 3 });
    expect(attributeValueFromWire({ double: 1.5 })).toEqual({ type: "ATTRIBUTE_TYPE_DOUBLE", data: 1.5 });
    expect(attributeValueFromWire({ boolean_array: [true] })).toEqual({
      type: "ATTRIBUTE_TYPE_BOOLEAN_ARRAY",
      data: [true],
    });
    expect(attributeValueFromWire({ string_array: ["a"] })).toEqual({
      type: "ATTRIBUTE_TYPE_STRING_ARRAY",
      data: ["a"],
    });
    expect(attributeValueFromWire({ integer_array: [1] })).toEqual({
      type: "ATTRIBUTE_TYPE_INTEGER_ARRAY",
      data: [1],
    });
    expect(attributeValueFromWire({ double_array: [2.5] })).toEqual({
      type: "ATTRIBUTE_TYPE_DOUBLE_ARRAY",
      data: [2.5],
    });
  });

  it("an empty value is 404 ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH (Permify's empty Any)", () => {
    expect(errorOf(() => attributeValueFromWire({}))).toEqual({
      code: 5,
      message: "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH",
      details: [],
    });
  });

  it("an unknown type URL or a wrongly typed value is 400 code 3", () => {
    expect(errorOf(() => attributeValueFromWire(any("FloatValue", 1)))).toEqual({
      code: 3,
      message: 'unable to resolve "type.googleapis.com/base.v1.FloatValue": "not found"',
      details: [],
    });
    expect(errorOf(() => attributeValueFromWire(any("IntegerValue", 1.5)))).toEqual({
      code: 3,
      message: "invalid value for int32 type: 1.5",
      details: [],
    });
    expect(errorOf(() => attributeValueFromWire({ boolean: "yes" } as never))).toEqual({
      code: 3,
      message: 'invalid value for bool type: "yes"',
      details: [],
    });
  });

  it("responses always use the Any form", () => {
    expect(attributeValueToWire({ type: "ATTRIBUTE_TYPE_DOUBLE_ARRAY", data: [1.5] })).toEqual(
      any("DoubleArrayValue", [1.5]),
    );
  });
});
