import { describe, expect, it } from "vitest";
import type { SchemaDefinition } from "./ast.ts";
import { parseSchema } from "./parse-schema.ts";
import { printSchema } from "./print.ts";

/** The definition without source positions (they depend on the text layout). */
function withoutPositions(def: SchemaDefinition): unknown {
  return JSON.parse(JSON.stringify(def, (key, value) => (key === "pos" ? undefined : value)));
}

function roundTrip(text: string): { printed: string; same: boolean } {
  const def = parseSchema(text);
  const printed = printSchema(def);
  return {
    printed,
    same: JSON.stringify(withoutPositions(parseSchema(printed))) === JSON.stringify(withoutPositions(def)),
  };
}

const SCHEMAS = {
  loadTest: `entity user {
  relation self @user
  relation follower @user
  relation blocked @user
  attribute is_public boolean
  permission view = self or (is_public or follower) not blocked
}`,
  googleDocs: `entity user {}
entity organization {
  relation group @group
  relation document @document
  relation administrator @user @group#direct_member @group#manager
  relation direct_member @user
  permission admin = administrator
  permission member = direct_member or administrator or group.member
}
entity group {
  relation manager @user @group#direct_member @group#manager
  relation direct_member @user @group#direct_member @group#manager
  permission member = direct_member or manager
}
entity document {
  relation org @organization
  relation viewer @user @group#direct_member @group#manager
  relation manager @user @group#direct_member @group#manager
  action edit = manager or org.admin
  action view = viewer or manager or org.admin
}`,
  abac: `entity user {}
entity account {
  relation owner @user
  attribute balance double
  attribute tags string[]
  attribute limits integer[]
  permission withdraw = check_balance(balance) and owner
  permission vip = is_vip(tags) or (owner and not_blocked(limits))
}
rule check_balance(balance double) {
  (balance >= context.data.amount) && (context.data.amount <= 5000)
}
rule is_vip(tags string[]) {
  'vip' in tags
}
rule not_blocked(limits integer[]) { limits.size() > 0 && true }`,
  precedence: `entity user {}
entity doc {
  relation a @user
  relation b @user
  relation c @user
  permission p = a or b and c not a
  permission q = a or (b and (c not a))
  permission r = (a or b) and (c or a) not (b and c)
}`,
};

describe("printSchema", () => {
  for (const [name, text] of Object.entries(SCHEMAS)) {
    it(`prints ${name} so that it parses back to the same definition`, () => {
      expect(roundTrip(text).same).toBe(true);
    });
  }

  it("prints right operands that are operations in parentheses, left chains bare", () => {
    const { printed } = roundTrip(SCHEMAS.precedence);
    expect(printed).toContain("permission p = a or b and c not a\n");
    expect(printed).toContain("permission q = a or (b and (c not a))\n");
    expect(printed).toContain("permission r = a or b and (c or a) not (b and c)\n");
  });

  it("prints the exact layout", () => {
    expect(printSchema(parseSchema(SCHEMAS.loadTest))).toBe(`entity user {
    relation self @user
    relation follower @user
    relation blocked @user
    attribute is_public boolean
    permission view = self or (is_public or follower) not blocked
}
`);
  });

  it("keeps rule bodies verbatim, including Permify's rebuilt forms", () => {
    const def = parseSchema(SCHEMAS.abac);
    const again = parseSchema(printSchema(def));
    expect(again.rules.check_balance.expression).toBe(def.rules.check_balance.expression);
    expect(again.rules.not_blocked.expression).toBe("limits.size() > 0 && true");
    const empty = parseSchema("entity user {}\nrule r(a boolean) { a }");
    expect(empty.rules.r.expression).toBe("");
    expect(parseSchema(printSchema(empty)).rules.r.expression).toBe("");
  });

  it("keeps declaration order of entities and rules", () => {
    const { printed } = roundTrip("rule r(a boolean) {\n a\n}\nentity b {}\nentity a {}");
    expect(printed.indexOf("rule r")).toBeLessThan(printed.indexOf("entity b"));
    expect(printed.indexOf("entity b")).toBeLessThan(printed.indexOf("entity a"));
  });
});
