import { describe, expect, it } from "vitest";
import { PembaError } from "../errors.ts";
import {
  formatAttribute,
  formatTuple,
  parseAttributeString,
  parseEntityString,
  parseSubjectString,
  parseTupleString,
} from "./notation.ts";

function notationError(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(PembaError);
    expect((e as PembaError).code).toBe("ERROR_CODE_VALIDATION");
    return (e as PembaError).message;
  }
  throw new Error("expected an error");
}

describe("tuple notation", () => {
  it("parses direct and userset subjects; `...` means no relation", () => {
    expect(parseTupleString("doc:1#owner@user:1")).toEqual({
      entity: { type: "doc", id: "1" },
      relation: "owner",
      subject: { type: "user", id: "1", relation: "" },
    });
    expect(parseTupleString("doc:1#viewer@group:eng#member").subject).toEqual({
      type: "group",
      id: "eng",
      relation: "member",
    });
    expect(parseTupleString("doc:1#viewer@user:1#...").subject.relation).toBe("");
    expect(parseTupleString("  doc:1#owner@user:1 \n").entity.id).toBe("1");
  });

  it("round-trips through formatTuple", () => {
    for (const s of ["doc:1#owner@user:1", "doc:a-b_c#viewer@group:x.y#member", "folder:*#parent@folder:2"]) {
      expect(formatTuple(parseTupleString(s))).toBe(s);
    }
  });

  it("rejects malformed tuples, naming the string", () => {
    expect(notationError(() => parseTupleString("doc:1#owner"))).toBe('invalid tuple: "doc:1#owner"');
    for (const bad of [
      "doc#owner@user:1",
      "doc:1:2#owner@user:1",
      "doc:1#o@u@v:1",
      "doc:1#o@user",
      ":1#o@user:1",
      "doc:#o@user:1",
      "doc:1#o@user:",
    ]) {
      expect(notationError(() => parseTupleString(bad))).toBe(`invalid tuple: "${bad}"`);
    }
  });

  it("accepts what Permify's splitter accepts: no relation, extra `#` parts, spaces around parts", () => {
    expect(parseTupleString("doc:1@user:1")).toEqual({
      entity: { type: "doc", id: "1" },
      relation: "",
      subject: { type: "user", id: "1", relation: "" },
    });
    expect(parseTupleString("doc:1#a#b@user:1#m#n")).toMatchObject({
      relation: "a",
      subject: { relation: "m" },
    });
    expect(parseTupleString("doc:1#owner @ user:1")).toMatchObject({
      relation: "owner",
      subject: { id: "1" },
    });
  });

  it("entity and subject strings", () => {
    expect(parseEntityString("doc:1")).toEqual({ type: "doc", id: "1" });
    expect(parseSubjectString("group:1#member")).toEqual({ type: "group", id: "1", relation: "member" });
    expect(parseSubjectString("user:1")).toEqual({ type: "user", id: "1", relation: "" });
    expect(notationError(() => parseEntityString("doc"))).toBe('invalid entity: "doc"');
    expect(parseSubjectString("user:1#a#b").relation).toBe("a");
    expect(notationError(() => parseSubjectString("user"))).toBe('invalid subject: "user"');
  });
});

describe("attribute notation", () => {
  it("parses every type", () => {
    const v = (s: string) => parseAttributeString(`doc:1$a|${s}`).value;
    expect(v("boolean:true")).toEqual({ type: "ATTRIBUTE_TYPE_BOOLEAN", data: true });
    expect(v("boolean[]:true,F,0,TRUE")).toEqual({
      type: "ATTRIBUTE_TYPE_BOOLEAN_ARRAY",
      data: [true, false, false, true],
    });
    expect(v("string:hello world")).toEqual({ type: "ATTRIBUTE_TYPE_STRING", data: "hello world" });
    expect(v("string[]:vip,gold")).toEqual({ type: "ATTRIBUTE_TYPE_STRING_ARRAY", data: ["vip", "gold"] });
    expect(v("integer:-42")).toEqual({ type: "ATTRIBUTE_TYPE_INTEGER", data: -42 });
    expect(v("integer[]:1,+2,3")).toEqual({ type: "ATTRIBUTE_TYPE_INTEGER_ARRAY", data: [1, 2, 3] });
    expect(v("double:1.5")).toEqual({ type: "ATTRIBUTE_TYPE_DOUBLE", data: 1.5 });
    expect(v("double[]:1,2.5e3,.5")).toEqual({ type: "ATTRIBUTE_TYPE_DOUBLE_ARRAY", data: [1, 2500, 0.5] });
    expect(parseAttributeString("doc:1$is_public|boolean:t")).toEqual({
      entity: { type: "doc", id: "1" },
      attribute: "is_public",
      value: { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true },
    });
  });

  it("Go ParseBool spellings only; int32 range; decimal doubles", () => {
    for (const ok of ["1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"]) {
      expect(typeof parseAttributeString(`doc:1$a|boolean:${ok}`).value.data).toBe("boolean");
    }
    for (const bad of [
      "boolean:yes",
      "boolean:tRUE",
      "boolean:",
      "integer:2147483648",
      "integer:1.0",
      "integer:0x10",
      "double:abc",
      "double:1e999",
      "integer[]:1,,2",
      "float:1",
      "boolean[]:true,maybe",
    ]) {
      expect(notationError(() => parseAttributeString(`doc:1$a|${bad}`))).toBe(
        `invalid attribute: "doc:1$a|${bad}"`,
      );
    }
    expect(parseAttributeString("doc:1$a|integer:2147483647").value.data).toBe(2147483647);
    expect(parseAttributeString("doc:1$a|integer:-2147483648").value.data).toBe(-2147483648);
  });

  it("rejects malformed attribute strings", () => {
    for (const bad of [
      "doc:1$a",
      "doc:1a|boolean:true",
      "doc$a|boolean:true",
      "doc:1$a|b|boolean:true",
      "doc:1$a|string:a:b",
      "doc:1$a$b|boolean:true",
    ]) {
      expect(notationError(() => parseAttributeString(bad))).toBe(`invalid attribute: "${bad}"`);
    }
  });

  it("formats doubles without exponents, like Go's FormatFloat(v, 'f', -1, 64)", () => {
    expect(formatAttribute(parseAttributeString("doc:1$d|double:1e21"))).toBe(
      "doc:1$d|double:1000000000000000000000",
    );
    expect(formatAttribute(parseAttributeString("doc:1$d|double:1.5e-7"))).toBe("doc:1$d|double:0.00000015");
  });

  it("round-trips through formatAttribute", () => {
    for (const s of [
      "doc:1$a|boolean:true",
      "doc:1$tags|string[]:a,b",
      "doc:1$n|integer:-3",
      "doc:1$d|double:1.25",
      "doc:1$ds|double[]:1,2.5",
      "doc:1$bs|boolean[]:false,true",
    ]) {
      expect(formatAttribute(parseAttributeString(s))).toBe(s);
    }
  });
});
