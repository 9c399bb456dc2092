import { describe, expect, it } from "vitest";
import type { PermissionExpr, SchemaDefinition } from "./ast.ts";
import { parseSchema, tryParseSchema } from "./parse-schema.ts";
import { SchemaError, SchemaParseError } from "./schema-error.ts";

/** A permission tree as an s-expression: `(or a (and b c))`. */
function shape(e: PermissionExpr): string {
  switch (e.kind) {
    case "rewrite": {
      const op = { union: "or", intersection: "and", exclusion: "not" }[e.op];
      return `(${op} ${shape(e.children[0])} ${shape(e.children[1])})`;
    }
    case "computedUserSet":
      return e.relation;
    case "computedAttribute":
      return `$${e.name}`;
    case "tupleToUserSet":
      return `${e.tupleSet}.${e.computed}`;
    case "call":
      return `${e.ruleName}(${e.arguments.join(",")})`;
  }
}

const ABC = "entity user {}\nentity doc {\n relation a @user\n relation b @user\n relation c @user\n";

function permissionShape(expression: string): string {
  const def = parseSchema(`${ABC} permission p = ${expression}\n}`);
  return shape(def.entities.doc.permissions.p.child);
}

function parseError(text: string): string {
  const r = tryParseSchema(text);
  if (r.ok) throw new Error("expected a parse error");
  expect(r.error.code).toBe("ERROR_CODE_SCHEMA_PARSE");
  expect(r.error.grpcCode).toBe(13);
  return r.error.message;
}

describe("schema grammar", () => {
  it("parses entities, relations with several types, attributes, permissions and rules", () => {
    const def = parseSchema(`
entity user {}
entity organization {
    relation admin @user
    relation member @user @organization#member
    attribute credit integer
    attribute tags string[]
    permission view = admin or member
    action edit = admin
}
rule check_credit(credit integer) {
    credit > 5000
}`);
    expect(def.order).toEqual([
      { kind: "entity", name: "user" },
      { kind: "entity", name: "organization" },
      { kind: "rule", name: "check_credit" },
    ]);
    const org = def.entities.organization;
    expect(org.relations.member.references).toEqual([
      { type: "user", relation: "" },
      { type: "organization", relation: "member" },
    ]);
    expect(org.attributes.credit.type).toBe("ATTRIBUTE_TYPE_INTEGER");
    expect(org.attributes.tags.type).toBe("ATTRIBUTE_TYPE_STRING_ARRAY");
    expect(org.references).toEqual({
      admin: "REFERENCE_RELATION",
      member: "REFERENCE_RELATION",
      credit: "REFERENCE_ATTRIBUTE",
      tags: "REFERENCE_ATTRIBUTE",
      view: "REFERENCE_PERMISSION",
      edit: "REFERENCE_PERMISSION",
    });
    // `action` is a synonym of `permission`
    expect(shape(org.permissions.edit.child)).toBe("admin");
    expect(def.rules.check_credit).toEqual({
      name: "check_credit",
      parameters: [{ name: "credit", type: "ATTRIBUTE_TYPE_INTEGER" }],
      expression: "\ncredit > 5000",
      pos: { line: 11, column: 7 },
    });
  });

  it("keeps Permify's token positions: one-ahead columns, lines counted by \\n", () => {
    const def = parseSchema("entity user {}\nentity doc {\n  relation owner @user\n}");
    expect(def.entities.user.pos).toEqual({ line: 1, column: 9 });
    expect(def.entities.doc.relations.owner.pos).toEqual({ line: 3, column: 13 });
  });

  it("the load-test schema: exclusion applies to the whole left side", () => {
    const def = parseSchema(`entity user {
  relation self @user
  relation follower @user
  relation blocked @user
  attribute is_public boolean
  permission view = self or (is_public or follower) not blocked
}`);
    expect(shape(def.entities.user.permissions.view.child)).toBe(
      "(not (or self (or $is_public follower)) blocked)",
    );
  });

  it("and/or/not share one precedence and associate to the left", () => {
    expect(permissionShape("a or b and c")).toBe("(and (or a b) c)");
    expect(permissionShape("a and b or c")).toBe("(or (and a b) c)");
    expect(permissionShape("a not b or c")).toBe("(or (not a b) c)");
    expect(permissionShape("a or b not c")).toBe("(not (or a b) c)");
    expect(permissionShape("a or (b and c)")).toBe("(or a (and b c))");
    expect(permissionShape("((a))")).toBe("a");
    expect(permissionShape("a and (b or (c not a))")).toBe("(and a (or b (not c a)))");
  });

  it("not is binary only", () => {
    expect(parseError(`${ABC} permission p = not a\n}`)).toBe("6:23:no prefix parse function for NOT found");
    expect(parseError(`${ABC} permission p = a and not b\n}`)).toBe(
      "6:29:no prefix parse function for NOT found",
    );
  });

  it("one NEWLINE may follow = ( and or not; none may precede an operator", () => {
    expect(permissionShape("a or\n b")).toBe("(or a b)");
    expect(permissionShape("a not\n b")).toBe("(not a b)");
    expect(permissionShape("a and\n b")).toBe("(and a b)");
    expect(permissionShape("\n a")).toBe("a");
    expect(permissionShape("(\n a or b)")).toBe("(or a b)");
    expect(parseError(`${ABC} permission p = a\n or b\n}`)).toBe(
      "7:7:expected token to be RELATION, PERMISSION, ATTRIBUTE, got OR instead",
    );
    expect(parseError(`${ABC} permission p = a or\n\n b\n}`)).toBe(
      "8:4:no prefix parse function for NEWLINE found",
    );
    expect(parseError(`${ABC} permission p =\n\n a\n}`)).toBe(
      "8:4:no prefix parse function for NEWLINE found",
    );
    expect(parseError(`${ABC} permission p = (a or b\n)\n}`)).toBe(
      "7:2:expected next token to be RP, got NEWLINE instead",
    );
  });

  it("Permify parser cases 26 and 29: a line break before the next operand is an error", () => {
    expect(
      parseError(
        "\n\t\t\tentity account {\n    \t\t\trelation owner @user\n    \t\t\tattribute balance float\n\n    \t\t\tpermission withdraw = check_balance(request.amount, balance)\n\t\t\t\t\towner\n\t\t\t}\n",
      ),
    ).toBe("8:2:expected token to be RELATION, PERMISSION, ATTRIBUTE, got IDENT instead");
    expect(
      parseError(
        "\n\t\t\tentity account {\n    \t\t\trelation owner @user\n    \t\t\trelation admin @user\n\n    \t\t\tpermission withdraw = admin \n\t\t\t\t\tor owner\n\t\t\t}\n\t\t\t",
      ),
    ).toBe("7:15:expected token to be RELATION, PERMISSION, ATTRIBUTE, got OR instead");
  });

  it("`;` is a NEWLINE: one-line schemas", () => {
    const def = parseSchema("entity user {}; entity doc { relation a @user; permission p = a }");
    expect(shape(def.entities.doc.permissions.p.child)).toBe("a");
    expect(parseError("entity user {}; entity doc { relation a @user; permission p = a; or a }")).toBe(
      "1:71:expected token to be RELATION, PERMISSION, ATTRIBUTE, got OR instead",
    );
  });

  it("comments are ignored everywhere outside rule bodies", () => {
    const def = parseSchema(`// header
entity user {} /* trailing */
entity doc { // members
  relation /* inline */ owner @user // who owns it
  /* a
     multi-line comment */
  permission view = owner /* or nobody */ or owner
}`);
    expect(shape(def.entities.doc.permissions.view.child)).toBe("(or owner owner)");
  });

  it("newlines inside a block comment do not advance Permify's line counter", () => {
    expect(parseError("entity user {} /*\n\n*/ entity 1")).toBe(
      "1:32:expected next token to be IDENT, got INTEGER instead",
    );
  });

  it("identifiers have no digits", () => {
    expect(
      parseError("entity user {}\nentity doc {\n  relation owner @user\n  permission p1 = owner\n}"),
    ).toBe("4:17:expected next token to be ASSIGN, got INTEGER instead");
    expect(parseError("entity user2 {}")).toBe("1:14:expected next token to be LCB, got INTEGER instead");
    expect(parseError("entity user {}\nentity doc { relation owner @user2 }")).toBe(
      "2:38:expected token to be RELATION, PERMISSION, ATTRIBUTE, got INTEGER instead",
    );
  });

  it("\\r\\n counts as two lines, as in Permify's lexer", () => {
    expect(parseError("entity user {}\r\nentity 1")).toBe(
      "3:10:expected next token to be IDENT, got INTEGER instead",
    );
  });

  it("a NUL byte ends the input; unterminated strings and comments run to the end", () => {
    expect(Object.keys(parseSchema("entity user {}\u0000 entity doc { garbage").entities)).toEqual(["user"]);
    expect(Object.keys(parseSchema('entity user {} "abc').entities)).toEqual(["user"]);
    expect(Object.keys(parseSchema("entity user {} /* entity doc {").entities)).toEqual(["user"]);
    expect(parseError("entity user { relation a @user /* }")).toBe(
      "1:39:expected token to be RCB, got EOF instead",
    );
  });

  it("top-level tokens other than entity and rule are skipped silently", () => {
    const def = parseSchema('schema v = 1 ; } ) @ "text"\nentity user {}\n} stray');
    expect(Object.keys(def.entities)).toEqual(["user"]);
  });

  it("stray `{` inside an entity body is skipped (Permify's quirk)", () => {
    expect(Object.keys(parseSchema("entity user { { relation a @user }").entities.user.relations)).toEqual([
      "a",
    ]);
  });

  it("dotted identifiers and rule calls", () => {
    const def = parseSchema(`entity user {}
entity org { relation member @user }
entity doc {
  relation parent @org
  attribute amount integer
  attribute flag boolean
  permission p = parent.member and check(amount, flag)
}
rule check(amount integer, flag boolean) { flag && amount > 3 }`);
    expect(shape(def.entities.doc.permissions.p.child)).toBe("(and parent.member check(amount,flag))");
  });

  it("Permify parser cases 16-22: error messages and positions", () => {
    expect(parseError("\n\t\t\tentity & {\n\t\t\t")).toBe(
      "2:13:expected next token to be IDENT, got AMPERSAND instead",
    );
    expect(parseError("\n\t\t\tentity asd \n\t\t\t")).toBe(
      "3:2:expected next token to be LCB, got NEWLINE instead",
    );
    expect(parseError("\n\t\t\tentity asd {\n\t\t\t")).toBe("3:7:expected token to be RCB, got EOF instead");
    expect(parseError("\n\t\t\tentity asd {\n\n\t\t\t\tattribute 987d bool\t\t\t\t\n\n\t\t\t")).toBe(
      "4:19:expected next token to be IDENT, got INTEGER instead",
    );
    expect(parseError("\n\t\t\tentity asd {\n\n\t\t\t\trelation user user\t\t\t\t\n\n\t\t\t")).toBe(
      "4:24:expected next token to be SIGN, got IDENT instead",
    );
    expect(
      parseError("\n\t\t\tentity asd {\n\n\t\t\t\trelation user @\n\t\t\t\trelation admin @user\n\n\t\t\t"),
    ).toBe("5:2:expected next token to be IDENT, got NEWLINE instead");
    expect(
      parseError(
        "\n\t\t\tentity asd {\n\n\t\t\t\trelation admin @user\n\n\t\t\t\tpermission = admin\n\t\t\t",
      ),
    ).toBe("6:18:expected next token to be IDENT, got ASSIGN instead");
  });

  it("other parse errors", () => {
    const u = "entity user {}\n";
    expect(parseError(`${u}entity doc { relation owner @user permission p = owner or }`)).toBe(
      "2:62:no prefix parse function for RCB found",
    );
    expect(parseError(`${u}entity doc { attribute a string[ }`)).toBe(
      "2:36:expected next token to be RSB, got RCB instead",
    );
    expect(parseError(`${u}entity doc { relation owner @user#`)).toBe(
      "2:37:expected next token to be IDENT, got EOF instead",
    );
    expect(parseError(`${u}entity doc { relation owner @user permission p = f(,a) }`)).toBe(
      "2:55:expected token to be IDENT, got COMMA instead",
    );
    expect(parseError(`${u}entity doc { relation owner @user permission p = f(a b) }`)).toBe(
      "2:56:expected next token to be RP, got IDENT instead",
    );
    expect(parseError(`${u}rule r(a integer b) { a > 1 }`)).toBe(
      "2:20:expected next token to be RP, got IDENT instead",
    );
    expect(parseError(`${u}rule r(a integer) {`)).toBe("2:23:expected next token to be RCB, got EOF instead");
    expect(parseError(`${u}rule r(a integer) { a`)).toBe(
      "2:24:expected next token to be RCB, got EOF instead",
    );
    expect(parseError(`${u}entity doc { relation a @user permission p = a.1 }`)).toBe(
      "2:50:expected next token to be IDENT, got INTEGER instead",
    );
    expect(parseError("entity user { | }")).toBe(
      "1:19:expected token to be RELATION, PERMISSION, ATTRIBUTE, got ILLEGAL instead",
    );
  });

  it("duplicate names: entities and rules share a namespace; members share one per entity", () => {
    expect(parseError("entity user {}\nentity user {}")).toBe("2:15:duplication found for user");
    expect(parseError("entity user {\n relation a @user\n permission a = a\n}")).toBe(
      "3:17:duplication found for user#a",
    );
    expect(parseError("entity user {}\nrule user(a integer) { a > 1 }")).toBe(
      "2:33:duplication found for user",
    );
    expect(parseError("entity user { relation a @user attribute a boolean }")).toBe(
      "1:54:duplication found for user#a",
    );
  });

  it("errors are SchemaErrors with a position and gRPC code 13", () => {
    try {
      parseSchema("entity user {}\nentity user {}");
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(SchemaError);
      expect((e as SchemaError).position).toEqual({ line: 2, column: 15 });
      expect((e as SchemaError).httpStatus).toBe(500);
      expect((e as SchemaError).toJSON()).toEqual({
        code: 13,
        message: "2:15:duplication found for user",
        details: [],
      });
    }
  });

  it("a parse error names the token it failed on (for editors), apart from Permify's message position", () => {
    const failedOn = (text: string) => {
      const r = tryParseSchema(text);
      if (r.ok || !(r.error instanceof SchemaParseError)) throw new Error("expected a parse error");
      return { message: r.error.message, token: r.error.token };
    };
    // `}` where an operand was due: Permify's position is after the peek token (the newline after `}`)
    expect(
      failedOn("entity user {}\n\nentity doc {\n  relation owner @user\n  permission edit = owner or\n}\n"),
    ).toEqual({
      message: "7:2:no prefix parse function for RCB found",
      token: { line: 6, column: 1, length: 1 },
    });
    // a mismatch: the position is one column past the end of the offending token (Permify's one-ahead columns)
    expect(failedOn("entity user {}\nentity doc {\n  relation owner user\n}")).toEqual({
      message: "3:23:expected next token to be SIGN, got IDENT instead",
      token: { line: 3, column: 18, length: 4 },
    });
    // a member keyword expected: after the peek token
    expect(failedOn("entity user {}\nentity doc {\n  relation owner @user\n  foo\n}\n")).toEqual({
      message: "5:2:expected token to be RELATION, PERMISSION, ATTRIBUTE, got IDENT instead",
      token: { line: 4, column: 3, length: 3 },
    });
  });

  it("unbounded nesting is refused instead of overflowing the stack", () => {
    const deep = `${ABC} permission p = ${"(".repeat(5000)}a${")".repeat(5000)}\n}`;
    expect(parseError(deep)).toMatch(/^6:\d+:expression nesting exceeds 1000 levels$/);
    const long = `${ABC} permission p = a${" or a".repeat(2000)}\n}`;
    expect(parseError(long)).toMatch(/expression nesting exceeds 1000 levels$/);
    expect(permissionShape(`${"(".repeat(200)}a${")".repeat(200)}`)).toBe("a");
  });
});

describe("rule bodies, rebuilt from token literals as Permify does", () => {
  function ruleBody(body: string): string {
    const def: SchemaDefinition = parseSchema(`entity user {}\nrule r(a string) {${body}}`);
    return def.rules.r.expression;
  }

  it("multi-line body: newline kept, indentation before the first token and the token before } dropped", () => {
    expect(ruleBody("\n\t\t\t\tbalance >= amount && amount <= 5000\n\t\t\t")).toBe(
      "\nbalance >= amount && amount <= 5000\n\t\t",
    );
  });

  it("one-line body: the space after the first token is lost, so is the last token", () => {
    expect(ruleBody(" a > 1 ")).toBe("a> 1");
    expect(ruleBody(" a > 1")).toBe("a> ");
    expect(ruleBody(" a ")).toBe("");
  });

  it("double-quoted strings lose their quotes; single quotes stay", () => {
    expect(ruleBody('\n  "vip" in a\n')).toBe("\nvip in a");
    expect(ruleBody("\n  'vip' in a\n")).toBe("\n'vip' in a");
    expect(ruleBody('\n "a\\"b\\n" \n')).toBe('\na"b\n ');
  });

  it("comments are pasted without markers; `;` stays", () => {
    expect(ruleBody("\n a // note\n b /* more */ c; d\n")).toBe("\na  note\n b  more  c; d");
  });

  it("the body ends at the first }; the rest of the line is skipped at top level", () => {
    const def = parseSchema("entity user {}\nrule r(a string) {\n {'k': 1}.k == 1\n}");
    expect(def.rules.r.expression).toBe("\n{'k': ");
  });

  it("an empty body swallows text up to the next } (Permify's quirk)", () => {
    const def = parseSchema("entity user {}\nrule r(a string) {}\nentity doc {}\n");
    expect(def.rules.r.expression).toBe("}\nentity doc ");
    expect(Object.keys(def.entities)).toEqual(["user"]);
  });

  it("parameters: name type and name type[]", () => {
    const def = parseSchema("entity user {}\nrule r(a string[], b double, c boolean[], d integer) {\n a\n}");
    expect(def.rules.r.parameters).toEqual([
      { name: "a", type: "ATTRIBUTE_TYPE_STRING_ARRAY" },
      { name: "b", type: "ATTRIBUTE_TYPE_DOUBLE" },
      { name: "c", type: "ATTRIBUTE_TYPE_BOOLEAN_ARRAY" },
      { name: "d", type: "ATTRIBUTE_TYPE_INTEGER" },
    ]);
  });

  it("non-ASCII text: columns count bytes, string contents decode back", () => {
    expect(parseError("entity user {} // é\nentity é")).toBe(
      "2:10:expected next token to be IDENT, got ILLEGAL instead",
    );
    expect(parseError("entity user {} /* é */ entity 1")).toBe(
      "1:34:expected next token to be IDENT, got INTEGER instead",
    );
    expect(ruleBody('\n a == "é"\n')).toBe("\na == é");
  });
});
