import { describe, expect, it } from "vitest";
import { PembaError } from "../errors.ts";
import type { Attribute, Tuple } from "../model.ts";
import { parseAttributeString, parseTupleString } from "./notation.ts";
import { parseSchema } from "./parse-schema.ts";
import { validateAttribute, validateTuple } from "./validate-data.ts";

const schema = parseSchema(`
entity user {
  relation self @user
}
entity group {
  relation member @user @group#member
}
entity doc {
  relation owner @user
  relation viewer @user @group#member
  attribute public boolean
  attribute tags string[]
  attribute score integer
  permission view = owner or viewer
}`);

function failure(f: () => void): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(PembaError);
    const err = e as PembaError;
    expect(err.message).toBe(err.code);
    return err.code;
  }
  return "ok";
}

const tuple = (s: string) => failure(() => validateTuple(schema, parseTupleString(s)));
const attribute = (s: string) => failure(() => validateAttribute(schema, parseAttributeString(s)));

describe("validateTuple", () => {
  it("accepts allowed subject types", () => {
    expect(tuple("doc:1#owner@user:1")).toBe("ok");
    expect(tuple("doc:1#viewer@group:1#member")).toBe("ok");
    expect(tuple("group:1#member@group:2#member")).toBe("ok");
    expect(tuple("user:1#self@user:1")).toBe("ok");
  });

  it("rejects unknown entity types, relations and subject types", () => {
    expect(tuple("folder:1#owner@user:1")).toBe("ERROR_CODE_SCHEMA_NOT_FOUND");
    expect(tuple("doc:1#editor@user:1")).toBe("ERROR_CODE_RELATION_DEFINITION_NOT_FOUND");
    expect(tuple("doc:1#view@user:1")).toBe("ERROR_CODE_RELATION_DEFINITION_NOT_FOUND");
    expect(tuple("doc:1#owner@group:1")).toBe("ERROR_CODE_SUBJECT_TYPE_NOT_FOUND");
    expect(tuple("doc:1#owner@group:1#member")).toBe("ERROR_CODE_SUBJECT_TYPE_NOT_FOUND");
    expect(tuple("doc:1#viewer@group:1")).toBe("ERROR_CODE_SUBJECT_TYPE_NOT_FOUND");
    expect(tuple("doc:1#viewer@user:1#self")).toBe("ERROR_CODE_SUBJECT_TYPE_NOT_FOUND");
  });

  it("rejects an entity that is its own subject through the same relation", () => {
    expect(tuple("group:1#member@group:1#member")).toBe("ERROR_CODE_ENTITY_AND_SUBJECT_CANNOT_BE_EQUAL");
    const t: Tuple = {
      entity: { type: "user", id: "1" },
      relation: "self",
      subject: { type: "user", id: "1", relation: "self" },
    };
    expect(failure(() => validateTuple(schema, t))).toBe("ERROR_CODE_ENTITY_AND_SUBJECT_CANNOT_BE_EQUAL");
  });
});

describe("validateAttribute", () => {
  it("accepts values of the declared type", () => {
    expect(attribute("doc:1$public|boolean:true")).toBe("ok");
    expect(attribute("doc:1$tags|string[]:a,b")).toBe("ok");
    expect(attribute("doc:1$score|integer:3")).toBe("ok");
  });

  it("rejects unknown entities and attributes, and type mismatches", () => {
    expect(attribute("folder:1$public|boolean:true")).toBe("ERROR_CODE_SCHEMA_NOT_FOUND");
    expect(attribute("doc:1$private|boolean:true")).toBe("ERROR_CODE_ATTRIBUTE_DEFINITION_NOT_FOUND");
    expect(attribute("doc:1$owner|boolean:true")).toBe("ERROR_CODE_ATTRIBUTE_DEFINITION_NOT_FOUND");
    expect(attribute("doc:1$tags|string:a")).toBe("ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH");
    expect(attribute("doc:1$score|double:3")).toBe("ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH");
    const wrongShape: Attribute = {
      entity: { type: "doc", id: "1" },
      attribute: "score",
      value: { type: "ATTRIBUTE_TYPE_INTEGER", data: 1.5 },
    };
    expect(failure(() => validateAttribute(schema, wrongShape))).toBe("ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH");
  });
});
