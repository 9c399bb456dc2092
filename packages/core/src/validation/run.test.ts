import { describe, expect, it } from "vitest";
import { formatReport } from "./report.ts";
import { validateFile } from "./run.ts";
import { validationTestFile as file, lineOf } from "./testing.ts";

describe("validateFile", () => {
  it("passes checks, entity filters and subject filters that hold", async () => {
    const report = await validateFile(
      file({
        scenarios: `
  - name: all good
    checks:
      - entity: doc:1
        subject: user:1
        assertions: {view: true, edit: true}
      - entity: doc:2
        subject: user:1
        assertions: {view: false}
    entity_filters:
      - entity_type: doc
        subject: user:2
        assertions: {view: ["3", "2"], edit: []}
    subject_filters:
      - subject_reference: user
        entity: doc:2
        assertions: {view: ["2"]}
      - subject_reference: org#member
        entity: doc:2
        assertions: {view: ["1"]}`,
      }),
    );
    expect(formatReport(report)).toBe("SUCCESS: 7 of 7 assertions passed");
    expect(report.ok).toBe(true);
    expect(report.passed).toBe(7);
    expect(report.failed).toBe(0);
    expect(report.assertions.map((a) => [a.kind, a.query, a.actual])).toEqual([
      ["check", "user:1 view doc:1", true],
      ["check", "user:1 edit doc:1", true],
      ["check", "user:1 view doc:2", false],
      ["entity_filter", "user:2 view doc", expect.arrayContaining(["2", "3"])],
      ["entity_filter", "user:2 edit doc", []],
      ["subject_filter", "doc:2 view user", ["2"]],
      ["subject_filter", "doc:2 view org#member", ["1"]],
    ]);
  });

  it("reports a failing assertion with its line, query, expected and actual", async () => {
    const text = file({
      scenarios: `
  - name: wrong
    checks:
      - entity: doc:1
        subject: user:2
        assertions:
          view: true
          edit: false
    entity_filters:
      - entity_type: doc
        subject: user:1
        assertions:
          view: ["1", "2"]
    subject_filters:
      - subject_reference: user
        entity: doc:1
        assertions:
          edit: ["1", "9"]`,
    });
    const report = await validateFile(text);
    expect(report.ok).toBe(false);
    expect(report.passed).toBe(1);
    expect(report.failed).toBe(3);
    expect(formatReport(report)).toBe(
      [
        `fail: line ${lineOf(text, "view: true")}: user:2 view doc:1 -> expected: ALLOWED actual: DENIED`,
        `fail: line ${lineOf(text, 'view: ["1", "2"]')}: user:1 view doc -> expected: [1 2] actual: [1 3]`,
        `fail: line ${lineOf(text, 'edit: ["1", "9"]')}: doc:1 edit user -> expected: [1 9] actual: [1]`,
        "FAILED: 1 of 4 assertions passed, 3 failed",
      ].join("\n"),
    );
    expect(report.assertions[0]).toEqual({
      kind: "check",
      scenario: "wrong",
      query: "user:2 view doc:1",
      line: lineOf(text, "view: true"),
      expected: true,
      actual: false,
      pass: false,
    });
  });

  it("compares lookup results as a sorted multiset: order does not matter, length does", async () => {
    const report = await validateFile(
      file({
        scenarios: `
  - name: sets
    entity_filters:
      - entity_type: doc
        subject: user:2
        assertions: {view: ["3", "2"]}
      - entity_type: doc
        subject: user:2
        assertions: {view: ["2", "3", "3"]}`,
      }),
    );
    expect(report.assertions.map((a) => a.pass)).toEqual([true, false]);
  });

  it("reads a YAML null assertion as an expected DENIED", async () => {
    const text = file({
      scenarios: `
  - name: nulls
    checks:
      - entity: doc:1
        subject: user:2
        assertions:
          edit:
          view: ~`,
    });
    const report = await validateFile(text);
    expect(report.ok).toBe(true);
    expect(report.assertions.map((a) => [a.query, a.expected, a.actual, a.line])).toEqual([
      ["user:2 edit doc:1", false, false, lineOf(text, "edit:")],
      ["user:2 view doc:1", false, false, lineOf(text, "view: ~")],
    ]);
  });

  it("counts an engine error as a failure of that assertion and goes on", async () => {
    const text = file({
      scenarios: `
  - name: unknown permission
    checks:
      - entity: doc:1
        subject: user:1
        assertions:
          nope: false
          view: true`,
    });
    const report = await validateFile(text);
    expect(report.ok).toBe(false);
    expect(report.passed).toBe(1);
    const [failure] = report.assertions;
    expect(failure.pass).toBe(false);
    expect(failure.actual).toBeUndefined();
    expect(failure.error).toBe("ERROR_CODE_SCHEMA_NOT_FOUND");
    expect(formatReport(report).split("\n")[0]).toBe(
      `fail: line ${lineOf(text, "nope:")}: user:1 nope doc:1 -> ${failure.error}`,
    );
  });

  describe("depth", () => {
    const withDepth = (depth: string) =>
      file({
        scenarios: `
  - name: depth
    checks:
      - entity: doc:2
        subject: user:2
        ${depth}
        assertions: {view: true, edit: false}`,
      });

    it("0 or absent means 100", async () => {
      expect((await validateFile(withDepth("depth: 0"))).ok).toBe(true);
      expect((await validateFile(withDepth(""))).ok).toBe(true);
    });

    it("1 and 2 fail every assertion of the query with Permify's message", async () => {
      for (const d of [1, 2]) {
        const report = await validateFile(withDepth(`depth: ${d}`));
        expect(report.ok).toBe(false);
        expect(report.assertions.map((a) => a.error)).toEqual([
          "depth must be greater than or equal to 3",
          "depth must be greater than or equal to 3",
        ]);
      }
    });

    it("depthOverride replaces the file's depth and is checked the same way", async () => {
      expect((await validateFile(withDepth("depth: 1"), { depthOverride: 50 })).ok).toBe(true);
      const report = await validateFile(withDepth("depth: 0"), { depthOverride: 2 });
      expect(report.failed).toBe(2);
      expect(report.assertions[0].error).toBe("depth must be greater than or equal to 3");
    });

    it("a depth too small for the walk is an engine error (ERROR_CODE_DEPTH_NOT_ENOUGH), not a DENIED", async () => {
      const chain = (depth: number) => `schema: |-
  entity user {}
  entity doc {
    relation owner @user
    permission pe = owner
    permission pd = pe
    permission pc = pd
    permission pb = pc
    permission pa = pb
  }
relationships: [doc:1#owner@user:1]
scenarios:
  - checks:
      - entity: doc:1
        subject: user:1
        depth: ${depth}
        assertions: {pa: true, pb: true, pc: true, pd: true}
`;
      const shallow = await validateFile(chain(3));
      expect(shallow.assertions.map((a) => [a.query, a.pass, a.error])).toEqual([
        ["user:1 pa doc:1", false, "ERROR_CODE_DEPTH_NOT_ENOUGH"],
        ["user:1 pb doc:1", false, "ERROR_CODE_DEPTH_NOT_ENOUGH"],
        ["user:1 pc doc:1", true, undefined],
        ["user:1 pd doc:1", true, undefined],
      ]);
      expect((await validateFile(chain(5))).ok).toBe(true);
    });
  });

  describe("context", () => {
    it("contextual tuples and attributes take part in checks and lookups", async () => {
      const report = await validateFile(
        file({
          scenarios: `
  - name: ctx
    checks:
      - entity: doc:9
        subject: user:5
        context:
          tuples: ["doc:9#owner@user:5"]
        assertions: {edit: true}
      - entity: doc:9
        subject: user:5
        assertions: {edit: false}
      - entity: doc:8
        subject: user:5
        context:
          attributes: ["doc:8$public|boolean:true"]
        assertions: {view: true}
    entity_filters:
      - entity_type: doc
        subject: user:5
        context:
          tuples: ["doc:9#owner@user:5", "doc:7#owner@user:5"]
        assertions: {edit: ["7", "9"]}
    subject_filters:
      - subject_reference: user
        entity: doc:1
        context:
          tuples: ["doc:1#owner@user:6"]
        assertions: {edit: ["1", "6"]}`,
        }),
      );
      expect(formatReport(report)).toBe("SUCCESS: 5 of 5 assertions passed");
    });

    it("context data reaches rules as context.data", async () => {
      const report = await validateFile(
        file({
          scenarios: `
  - name: data
    checks:
      - entity: doc:1
        subject: user:1
        context:
          data: {amount: 50}
        assertions: {spend: true}
      - entity: doc:1
        subject: user:1
        context:
          tuples: []
          attributes: []
          data:
            amount: 500
        assertions: {spend: false}`,
        }),
      );
      expect(formatReport(report)).toBe("SUCCESS: 2 of 2 assertions passed");
    });

    it("a contextual tuple that does not parse is an error of that query; the run goes on", async () => {
      const text = file({
        scenarios: `
  - name: bad ctx
    checks:
      - entity: doc:1
        subject: user:1
        context:
          tuples: ["not a tuple"]
        assertions: {view: true}
      - entity: doc:1
        subject: user:1
        assertions: {view: true}`,
      });
      const report = await validateFile(text);
      expect(report.ok).toBe(false);
      expect(report.passed).toBe(1);
      expect(report.failed).toBe(0);
      expect(report.problems).toHaveLength(1);
      expect(report.problems[0]).toMatchObject({
        stage: "scenarios",
        key: "user:1 doc:1",
        line: lineOf(text, "- entity: doc:1"),
      });
    });
  });

  it("each file runs in a fresh store", async () => {
    const first = await validateFile(file({ scenarios: "" }));
    expect(first.ok).toBe(true);
    const report = await validateFile(
      file({
        relationships: [],
        attributes: [],
        scenarios: `
  - name: fresh
    checks:
      - entity: doc:1
        subject: user:1
        assertions: {edit: false}`,
      }),
    );
    expect(report.ok).toBe(true);
  });
});
