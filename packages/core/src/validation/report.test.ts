import { describe, expect, it } from "vitest";
import type { ValidationReport } from "./report.ts";
import { formatReport } from "./report.ts";

describe("formatReport", () => {
  it("prints SUCCESS with the count when everything passed", () => {
    const report: ValidationReport = {
      ok: true,
      problems: [],
      passed: 2,
      failed: 0,
      assertions: [
        {
          kind: "check",
          scenario: "s",
          query: "user:1 view doc:1",
          line: 9,
          expected: true,
          actual: true,
          pass: true,
        },
        {
          kind: "entity_filter",
          scenario: "s",
          query: "user:1 view doc",
          line: 12,
          expected: ["1"],
          actual: ["1"],
          pass: true,
        },
      ],
    };
    expect(formatReport(report)).toBe("SUCCESS: 2 of 2 assertions passed");
  });

  it("prints each failure with its line, expected and actual, then the summary", () => {
    const report: ValidationReport = {
      ok: false,
      problems: [{ stage: "relationships", key: "doc:1#owner", line: 4, message: "ERROR_CODE_VALIDATION" }],
      passed: 1,
      failed: 3,
      assertions: [
        {
          kind: "check",
          scenario: "s",
          query: "user:1 view doc:1",
          line: 9,
          expected: true,
          actual: false,
          pass: false,
        },
        {
          kind: "check",
          scenario: "s",
          query: "user:1 edit doc:1",
          line: 10,
          expected: false,
          actual: false,
          pass: true,
        },
        {
          kind: "subject_filter",
          scenario: "s",
          query: "doc:1 view user",
          line: 14,
          expected: ["1", "2"],
          actual: ["2"],
          pass: false,
        },
        {
          kind: "check",
          scenario: "s",
          query: "user:2 checks group:1",
          line: 20,
          expected: false,
          error: "ERROR_CODE_PERMISSION_NOT_FOUND",
          pass: false,
        },
      ],
    };
    expect(formatReport(report)).toBe(
      [
        "fail: line 4: doc:1#owner -> ERROR_CODE_VALIDATION",
        "fail: line 9: user:1 view doc:1 -> expected: ALLOWED actual: DENIED",
        "fail: line 14: doc:1 view user -> expected: [1 2] actual: [2]",
        "fail: line 20: user:2 checks group:1 -> ERROR_CODE_PERMISSION_NOT_FOUND",
        "FAILED: 1 of 4 assertions passed, 3 failed, 1 other error(s)",
      ].join("\n"),
    );
  });

  it("prints why an aborted run stopped", () => {
    const base = { ok: false, problems: [], assertions: [], passed: 0, failed: 0 };
    expect(
      formatReport({
        ...base,
        aborted: {
          stage: "relationships",
          code: "ERROR_CODE_SUBJECT_TYPE_NOT_FOUND",
          message: "ERROR_CODE_SUBJECT_TYPE_NOT_FOUND",
          key: "repository:1#owner@organization:2#admin",
          line: 7,
        },
      }),
    ).toBe(
      [
        'Error: ERROR_CODE_SUBJECT_TYPE_NOT_FOUND: invalid relationship "repository:1#owner@organization:2#admin" (line 7)',
        "FAILED: validation stopped at relationships",
      ].join("\n"),
    );
    expect(
      formatReport({
        ...base,
        aborted: { stage: "file", message: "invalid validation file:\n  line 3: x", line: 3 },
      }),
    ).toBe("Error: invalid validation file:\n  line 3: x\nFAILED: validation stopped at the file format");
    expect(
      formatReport({ ...base, aborted: { stage: "schema", message: "3:5: unexpected token", line: 1 } }),
    ).toBe(
      "Error: invalid schema (file line 1): 3:5: unexpected token\nFAILED: validation stopped at schema",
    );
  });
});
