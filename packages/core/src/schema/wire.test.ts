import { describe, expect, it } from "vitest";
import { parseSchema } from "./parse-schema.ts";
import { schemaToWire } from "./wire.ts";

describe("schemaToWire", () => {
  it("renders Permify's schemas/read JSON", () => {
    const def = parseSchema(`
entity user {}
entity organization {
  relation member @user
}
entity doc {
  relation org @organization
  relation viewer @user @organization#member
  attribute public boolean
  attribute score integer[]
  permission view = (viewer or org.member) not public
  permission ranked = high(score) and public
}
rule high(score integer[]) {
  score.size() > 2
}`);
    expect(schemaToWire(def)).toEqual({
      entity_definitions: {
        doc: {
          name: "doc",
          relations: {
            org: { name: "org", relation_references: [{ type: "organization", relation: "" }] },
            viewer: {
              name: "viewer",
              relation_references: [
                { type: "user", relation: "" },
                { type: "organization", relation: "member" },
              ],
            },
          },
          permissions: {
            ranked: {
              name: "ranked",
              child: {
                rewrite: {
                  rewrite_operation: "OPERATION_INTERSECTION",
                  children: [
                    {
                      leaf: {
                        call: { rule_name: "high", arguments: [{ computed_attribute: { name: "score" } }] },
                      },
                    },
                    { leaf: { computed_attribute: { name: "public" } } },
                  ],
                },
              },
            },
            view: {
              name: "view",
              child: {
                rewrite: {
                  rewrite_operation: "OPERATION_EXCLUSION",
                  children: [
                    {
                      rewrite: {
                        rewrite_operation: "OPERATION_UNION",
                        children: [
                          { leaf: { computed_user_set: { relation: "viewer" } } },
                          {
                            leaf: {
                              tuple_to_user_set: {
                                tupleSet: { relation: "org" },
                                computed: { relation: "member" },
                              },
                            },
                          },
                        ],
                      },
                    },
                    { leaf: { computed_attribute: { name: "public" } } },
                  ],
                },
              },
            },
          },
          attributes: {
            public: { name: "public", type: "ATTRIBUTE_TYPE_BOOLEAN" },
            score: { name: "score", type: "ATTRIBUTE_TYPE_INTEGER_ARRAY" },
          },
          references: {
            org: "REFERENCE_RELATION",
            public: "REFERENCE_ATTRIBUTE",
            ranked: "REFERENCE_PERMISSION",
            score: "REFERENCE_ATTRIBUTE",
            view: "REFERENCE_PERMISSION",
            viewer: "REFERENCE_RELATION",
          },
        },
        organization: {
          name: "organization",
          relations: { member: { name: "member", relation_references: [{ type: "user", relation: "" }] } },
          permissions: {},
          attributes: {},
          references: { member: "REFERENCE_RELATION" },
        },
        user: { name: "user", relations: {}, permissions: {}, attributes: {}, references: {} },
      },
      rule_definitions: {
        high: {
          name: "high",
          arguments: { score: "ATTRIBUTE_TYPE_INTEGER_ARRAY" },
          expression: { expr: "\nscore.size() > 2" },
        },
      },
      references: {
        doc: "REFERENCE_ENTITY",
        high: "REFERENCE_RULE",
        organization: "REFERENCE_ENTITY",
        user: "REFERENCE_ENTITY",
      },
    });
  });

  it("sorts map keys like protojson", () => {
    const wire = schemaToWire(
      parseSchema("entity zeta { relation b @zeta relation a @zeta }\nentity alpha {}"),
    );
    expect(Object.keys(wire.entity_definitions)).toEqual(["alpha", "zeta"]);
    expect(Object.keys(wire.entity_definitions.zeta.relations as object)).toEqual(["a", "b"]);
  });
});
