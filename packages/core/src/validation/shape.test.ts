import { describe, expect, it } from "vitest";
import { decodeShape, ShapeFormatError } from "./shape.ts";

function formatProblems(text: string): { line: number; message: string }[] {
  try {
    decodeShape(text);
  } catch (e) {
    if (e instanceof ShapeFormatError) return e.problems;
    throw e;
  }
  throw new Error("expected a ShapeFormatError");
}

describe("decodeShape", () => {
  it("decodes every section with the line of each item", () => {
    const shape = decodeShape(
      [
        "schema: |-", // 1
        "  entity user {}", // 2
        "relationships:", // 3
        "  - doc:1#owner@user:1", // 4
        "attributes:", // 5
        "  - doc:1$public|boolean:true", // 6
        "scenarios:", // 7
        "  - name: s1", // 8
        "    description: d", // 9
        "    checks:", // 10
        "      - entity: doc:1", // 11
        "        subject: user:1", // 12
        "        depth: 5", // 13
        "        context:", // 14
        "          tuples: [doc:1#owner@user:2]", // 15
        "          data: {amount: 3000, ip: 1.2.3.4}", // 16
        "        assertions:", // 17
        "          view: true", // 18
        "          edit:", // 19
        "    entity_filters:", // 20
        "      - entity_type: doc", // 21
        "        subject: user:1", // 22
        "        assertions:", // 23
        "          view: [1, '3']", // 24
        "    subject_filters:", // 25
        "      - subject_reference: user#member", // 26
        "        entity: doc:1", // 27
        "        context: null", // 28
        "        assertions:", // 29
        "          view: []", // 30
      ].join("\n"),
    );
    expect(shape.schema).toBe("entity user {}");
    expect(shape.schemaLine).toBe(1);
    expect(shape.schemaIsLiteralBlock).toBe(true);
    expect(shape.relationships).toEqual([{ value: "doc:1#owner@user:1", line: 4 }]);
    expect(shape.attributes).toEqual([{ value: "doc:1$public|boolean:true", line: 6 }]);
    const [s] = shape.scenarios;
    expect(s.name).toBe("s1");
    expect(s.description).toBe("d");
    expect(s.checks).toEqual([
      {
        entity: "doc:1",
        subject: "user:1",
        depth: 5,
        line: 11,
        extra: {},
        context: {
          tuples: [{ value: "doc:1#owner@user:2", line: 15 }],
          attributes: [],
          data: { amount: 3000, ip: "1.2.3.4" },
        },
        // YAML null decodes as false (Go's zero value)
        assertions: [
          { permission: "view", expected: true, line: 18 },
          { permission: "edit", expected: false, line: 19 },
        ],
      },
    ]);
    expect(s.entityFilters).toEqual([
      {
        entityType: "doc",
        subject: "user:1",
        depth: 0,
        line: 21,
        extra: {},
        context: { tuples: [], attributes: [], data: {} },
        assertions: [{ permission: "view", expected: ["1", "3"], line: 24 }],
      },
    ]);
    expect(s.subjectFilters).toEqual([
      {
        subjectReference: "user#member",
        entity: "doc:1",
        depth: 0,
        line: 26,
        extra: {},
        context: { tuples: [], attributes: [], data: {} },
        assertions: [{ permission: "view", expected: [], line: 30 }],
      },
    ]);
  });

  it("treats empty sections and an empty file as empty", () => {
    expect(decodeShape("schema: |-\n  entity user {}\nrelationships:\nattributes:\nscenarios:\n")).toEqual({
      schema: "entity user {}",
      schemaLine: 1,
      schemaIsLiteralBlock: true,
      relationships: [],
      attributes: [],
      scenarios: [],
    });
    expect(decodeShape("").scenarios).toEqual([]);
  });

  it("ignores unknown keys but keeps those of a query in `extra`", () => {
    const shape = decodeShape(
      "tenant_id: x\nfoo: 1\nscenarios:\n  - name: s\n    entity_filters:\n      - entity_type: doc\n        subject: user:1\n        scope: {org: ['2']}\n        assertions: {view: ['1']}\n",
    );
    expect(shape.scenarios[0].entityFilters[0].extra).toEqual({ scope: { org: ["2"] } });
  });

  it("accepts YAML 1.1 yes/no for assertions, like yaml.v3 does for bool fields", () => {
    const shape = decodeShape(
      "scenarios:\n  - checks:\n      - entity: a:1\n        subject: b:1\n        assertions: {x: yes, y: off}\n",
    );
    expect(shape.scenarios[0].checks[0].assertions.map((a) => a.expected)).toEqual([true, false]);
  });

  it("refuses a context written as a list, naming its line", () => {
    const problems = formatProblems(
      [
        "scenarios:", // 1
        "  - name: s", // 2
        "    checks:", // 3
        "      - entity: repository:3", // 4
        "        subject: user:1", // 5
        "        context:", // 6
        '          - "repository:3#owner@user:1"', // 7
        "        assertions:", // 8
        "          push: true", // 9
      ].join("\n"),
    );
    expect(problems).toEqual([
      {
        line: 7,
        message:
          "scenarios[0].checks[0].context must be a mapping with `tuples`, `attributes` and `data` keys, not a list",
      },
    ]);
  });

  it("reports every value of the wrong kind, each with its line, in line order", () => {
    const problems = formatProblems(
      [
        "schema: [a]", // 1
        "relationships: doc:1#owner@user:1", // 2
        "scenarios:", // 3
        "  - checks:", // 4
        "      - entity: doc:1", // 5
        "        subject: user:1", // 6
        "        depth: deep", // 7
        "        assertions:", // 8
        "          view: maybe", // 9
        "    entity_filters:", // 10
        "      - entity_type: doc", // 11
        "        assertions:", // 12
        "          view: '1'", // 13
      ].join("\n"),
    );
    expect(problems).toEqual([
      { line: 1, message: "schema must be a string, not a list" },
      { line: 2, message: 'relationships must be a list of strings, not the string "doc:1#owner@user:1"' },
      { line: 7, message: 'scenarios[0].checks[0].depth must be an integer, not the string "deep"' },
      {
        line: 9,
        message: 'scenarios[0].checks[0].assertions.view must be true or false, not the string "maybe"',
      },
      {
        line: 13,
        message:
          'scenarios[0].entity_filters[0].assertions.view must be a list of strings, not the string "1"',
      },
    ]);
  });

  it("reports YAML syntax errors with their line", () => {
    const problems = formatProblems("scenarios:\n  - name: a\n    checks: [\n");
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0].line).toBe(4);
  });

  it("refuses duplicate keys like yaml.v3", () => {
    const problems = formatProblems("schema: a\nschema: b\n");
    expect(problems[0].line).toBe(2);
    expect(problems[0].message).toMatch(/unique/);
  });

  it("names the line of a whole-file kind error", () => {
    expect(formatProblems("- a\n- b\n")).toEqual([
      {
        line: 1,
        message:
          "the file must be a mapping with `schema`, `relationships`, `attributes` and `scenarios`, not a list",
      },
    ]);
  });
});
