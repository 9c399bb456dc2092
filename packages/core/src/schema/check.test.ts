import { describe, expect, it } from "vitest";
import { parseSchema, tryParseSchema } from "./parse-schema.ts";

function compileError(text: string): string {
  const r = tryParseSchema(text);
  if (r.ok) throw new Error("expected a compile error");
  expect(r.error.code).toBe("ERROR_CODE_SCHEMA_COMPILE");
  expect(r.error.grpcCode).toBe(13);
  return r.error.message;
}

const U = "entity user {}\n";

describe("schema compile rules", () => {
  it("a schema without entities", () => {
    expect(compileError("")).toBe("1:1: no entity references found in schema");
    expect(compileError("// nothing\nrule r(a integer) {\n a > 1\n}")).toBe(
      "1:1: no entity references found in schema",
    );
  });

  it("declared names follow the API's name rule: at most 64 characters", () => {
    const n64 = "a".repeat(64);
    const n65 = "b".repeat(65);
    const ok = parseSchema(
      `entity ${n64} {\n relation ${n64} @${n64}\n attribute x_${n64.slice(2)} integer\n permission p = ${n64}\n}\nrule ${"r".repeat(64)}(${n64} integer) {\n ${n64} > 1\n}`,
    );
    expect(Object.keys(ok.entities)).toEqual([n64]);
    expect(compileError(`entity ${"u".repeat(1_000_000)} {}`)).toBe(
      "1:9: name longer than 64 characters (1000000)",
    );
    expect(compileError(`${U}entity doc {\n relation ${n65} @user\n}`)).toBe(
      "3:12: name longer than 64 characters (65)",
    );
    expect(compileError(`${U}entity doc {\n attribute ${n65} boolean\n}`)).toBe(
      "3:13: name longer than 64 characters (65)",
    );
    expect(compileError(`${U}entity doc {\n permission ${n65} = a\n}`)).toMatch(
      /^3:\d+: name longer than 64 characters \(65\)$/,
    );
    expect(compileError(`${U}rule ${n65}(a integer) {\n a > 1\n}`)).toMatch(/^2:\d+: name longer than 64/);
    expect(compileError(`${U}rule r(${n65} integer) {\n ${n65} > 1\n}`)).toMatch(
      /^2:\d+: name longer than 64/,
    );
  });

  it("no user entity is required", () => {
    expect(Object.keys(parseSchema("entity doc {}").entities)).toEqual(["doc"]);
  });

  it("relation types must name entities, and @T#r a relation of T", () => {
    expect(compileError(`${U}entity doc {\n  relation owner @userx\n}`)).toBe(
      "3:20: relation reference not found in entity references",
    );
    expect(
      compileError(
        `${U}entity group { relation member @user\n permission view = member }\nentity doc {\n  relation viewer @group#view\n}`,
      ),
    ).toBe("5:21: relation reference not found in entity references");
    expect(compileError(`${U}entity doc {\n  relation viewer @user#nothing\n}`)).toBe(
      "3:21: relation reference not found in entity references",
    );
  });

  it("a leaf must be a member of the entity", () => {
    expect(
      compileError(`${U}entity doc {\n  relation owner @user\n  permission p = owner or editor\n}`),
    ).toBe("4:28: undefined relation reference");
  });

  it("only boolean attributes are leaves", () => {
    expect(compileError(`${U}entity doc {\n  attribute score integer\n  permission p = score\n}`)).toBe(
      "4:19: schema compile",
    );
    expect(compileError(`${U}entity doc {\n  attribute flags boolean[]\n  permission p = flags\n}`)).toBe(
      "4:19: schema compile",
    );
    const def = parseSchema(`${U}entity doc {\n  attribute public boolean\n  permission p = public\n}`);
    expect(def.entities.doc.permissions.p.child).toEqual({
      kind: "computedAttribute",
      name: "public",
      pos: { line: 4, column: 19 },
    });
  });

  it("walks longer than r.x are not supported", () => {
    expect(
      compileError(`${U}entity doc {\n  relation parent @doc\n  permission p = parent.parent.owner\n}`),
    ).toBe("4:33: not supported relation walk");
  });

  it("r.x: r must be a relation (not a permission) and x must exist on the target", () => {
    expect(
      compileError(
        `${U}entity doc {\n  relation owner @user\n  permission view = owner\n  permission p = view.owner\n}`,
      ),
    ).toBe("5:19: undefined relation reference");
    expect(compileError(`${U}entity doc {\n  relation owner @user\n  permission p = owner.nothing\n}`)).toBe(
      "4:25: undefined relation reference",
    );
    expect(
      compileError(
        `${U}entity doc {\n  relation parent @doc\n  attribute a boolean\n  permission p = parent.a\n}`,
      ),
    ).toBe("5:26: undefined relation reference");
  });

  it("r.x descends into @T#s types: x must exist on every reachable type", () => {
    expect(
      compileError(
        `${U}entity org { relation member @user relation admin @user }\nentity doc {\n  relation org @org @org#admin\n  permission p = org.member\n}`,
      ),
    ).toBe("5:23: undefined relation reference");
    expect(
      compileError(
        `${U}entity org { relation member @user permission view = member }\nentity doc {\n  relation org @org @org#member\n  permission p = org.view\n}`,
      ),
    ).toBe("5:23: undefined relation reference");
    const def = parseSchema(
      `${U}entity doc {\n  relation owner @user\n  relation parent @doc @doc#parent\n  permission view = owner or parent.view\n}`,
    );
    expect(def.entities.doc.permissions.view.child).toMatchObject({
      kind: "rewrite",
      children: [
        { kind: "computedUserSet" },
        { kind: "tupleToUserSet", tupleSet: "parent", computed: "view" },
      ],
    });
  });

  it("a self-referencing userset type does not loop", () => {
    const def = parseSchema(
      `${U}entity group {\n relation member @user @group#member\n relation parent @group @group#parent\n permission p = parent.member\n}`,
    );
    expect(def.entities.group.permissions.p.child).toMatchObject({ kind: "tupleToUserSet" });
  });

  it("attribute types", () => {
    expect(compileError(`${U}entity doc {\n  attribute a int\n}`)).toBe("3:16: invalid argument");
    expect(compileError(`${U}entity doc {\n  attribute a bool[]\n}`)).toBe("3:16: invalid argument");
    expect(compileError(`${U}rule r(a int) { a > 1 }`)).toBe("2:11: invalid argument");
    const def = parseSchema(
      `${U}entity doc { attribute a boolean attribute b string[] attribute c integer[] attribute d double attribute e double[] }`,
    );
    expect(Object.values(def.entities.doc.attributes).map((a) => a.type)).toEqual([
      "ATTRIBUTE_TYPE_BOOLEAN",
      "ATTRIBUTE_TYPE_STRING_ARRAY",
      "ATTRIBUTE_TYPE_INTEGER_ARRAY",
      "ATTRIBUTE_TYPE_DOUBLE",
      "ATTRIBUTE_TYPE_DOUBLE_ARRAY",
    ]);
  });

  it("rule calls: rule exists, argument count, arguments are attributes named like the parameters", () => {
    const R = "\nrule r(a integer) { a > 1 }";
    expect(compileError(`${U}entity doc {\n  attribute a integer\n  permission p = r()\n}${R}`)).toBe(
      "4:19: missing argument",
    );
    expect(compileError(`${U}entity doc {\n  attribute a integer\n  permission p = q(a)\n}`)).toBe(
      "4:19: invalid rule reference",
    );
    expect(
      compileError(
        `${U}entity doc {\n  attribute a integer\n  attribute b integer\n  permission p = r(a, b)\n}${R}`,
      ),
    ).toBe("5:19: missing argument");
    expect(compileError(`${U}entity doc {\n  attribute a integer\n  permission p = r(b)\n}${R}`)).toBe(
      "4:19: invalid rule reference",
    );
    expect(compileError(`${U}entity doc {\n  attribute b integer\n  permission p = r(b)\n}${R}`)).toBe(
      "4:21: invalid argument",
    );
    expect(compileError(`${U}entity doc {\n  attribute a string\n  permission p = r(a)\n}${R}`)).toBe(
      "4:21: invalid argument",
    );
    expect(
      compileError(`${U}entity doc {\n  attribute a integer\n  permission p = r(request.a)\n}${R}`),
    ).toBe("4:29: not supported walk");
    const def = parseSchema(`${U}entity doc {\n  attribute a integer\n  permission p = r(a)\n}${R}`);
    expect(def.entities.doc.permissions.p.child).toEqual({
      kind: "call",
      ruleName: "r",
      arguments: ["a"],
      pos: { line: 4, column: 19 },
    });
  });

  it("array parameters match array attributes only", () => {
    const R = "\nrule r(tags string[]) {\n 'a' in tags\n}";
    expect(
      parseSchema(`${U}entity doc { attribute tags string[] permission p = r(tags) }${R}`).rules.r.parameters,
    ).toEqual([{ name: "tags", type: "ATTRIBUTE_TYPE_STRING_ARRAY" }]);
    expect(compileError(`${U}entity doc { attribute tags string permission p = r(tags) }${R}`)).toBe(
      "2:54: invalid argument",
    );
  });

  it("checks run in source order: the first bad statement is reported", () => {
    expect(compileError(`${U}entity doc {\n  attribute a int\n  permission p = nothing\n}`)).toBe(
      "3:16: invalid argument",
    );
    expect(compileError(`${U}entity doc {\n  permission p = nothing\n}\nrule r(a int) { a }`)).toBe(
      "3:19: undefined relation reference",
    );
    // relation types are validated before any permission
    expect(compileError(`${U}entity doc {\n  permission p = nothing\n  relation x @nobody\n}`)).toBe(
      "4:16: relation reference not found in entity references",
    );
  });
});
