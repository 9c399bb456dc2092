import { describe, expect, it } from "vitest";
import type { RuleDefinition } from "../schema/ast.ts";
import { compileRule, ruleArgument, zeroArgument } from "./cel-rule.ts";

const rule = (expression: string, parameters: RuleDefinition["parameters"]): RuleDefinition => ({
  name: "r",
  parameters,
  expression,
  pos: { line: 3, column: 1 },
});

describe("CEL rules", () => {
  it("integer attributes compare with JSON (double) context values", () => {
    const r = compileRule(
      rule("balance >= context.data.amount", [{ name: "balance", type: "ATTRIBUTE_TYPE_INTEGER" }]),
    );
    expect(r.evaluate([ruleArgument("ATTRIBUTE_TYPE_INTEGER", 4000)], { amount: 3000.5 })).toBe(true);
    expect(r.evaluate([ruleArgument("ATTRIBUTE_TYPE_INTEGER", 4000)], { amount: 4000.5 })).toBe(false);
    expect(r.evaluate([zeroArgument("ATTRIBUTE_TYPE_INTEGER")], { amount: 0 })).toBe(true);
  });

  it("a missing context.data key is Permify's execution error (gRPC 13)", () => {
    const r = compileRule(
      rule("balance >= context.data.amount", [{ name: "balance", type: "ATTRIBUTE_TYPE_INTEGER" }]),
    );
    expect(() => r.evaluate([1n], {})).toThrow("failed to evaluate expression: no such key: amount");
    try {
      r.evaluate([1n], {});
    } catch (e) {
      expect(e).toMatchObject({ code: "ERROR_CODE_EXECUTION", grpcCode: 13 });
    }
  });

  it.each([
    ["ATTRIBUTE_TYPE_BOOLEAN", "flag", "flag", true, true],
    ["ATTRIBUTE_TYPE_STRING", "name", "name == 'vip'", "vip", true],
    ["ATTRIBUTE_TYPE_DOUBLE", "score", "score > 1.5", 2.25, true],
    ["ATTRIBUTE_TYPE_INTEGER", "level", "level == 3", 3, true],
    ["ATTRIBUTE_TYPE_BOOLEAN_ARRAY", "flags", "true in flags", [false, true], true],
    ["ATTRIBUTE_TYPE_STRING_ARRAY", "tags", "'gold' in tags", ["vip", "gold"], true],
    ["ATTRIBUTE_TYPE_STRING_ARRAY", "tags", "'gold' in tags", ["vip"], false],
    ["ATTRIBUTE_TYPE_INTEGER_ARRAY", "levels", "2 in levels && size(levels) == 2", [1, 2], true],
    ["ATTRIBUTE_TYPE_DOUBLE_ARRAY", "levels", "levels.exists(x, x > 2.0)", [1.5, 2.5], true],
  ] as const)("%s parameter %s: %s", (type, param, expression, value, want) => {
    const r = compileRule(rule(expression, [{ name: param, type }]));
    expect(r.evaluate([ruleArgument(type, value as never)], {})).toBe(want);
  });

  it("compile errors: undeclared references, non-boolean results, syntax", () => {
    expect(() =>
      compileRule(rule("vip in tags", [{ name: "tags", type: "ATTRIBUTE_TYPE_STRING_ARRAY" }])),
    ).toThrow("3:1: undeclared reference to 'vip'");
    expect(() =>
      compileRule(rule("balance + 1", [{ name: "balance", type: "ATTRIBUTE_TYPE_INTEGER" }])),
    ).toThrow("rule expression must result in a boolean type not int");
    expect(() =>
      compileRule(rule("balance >=", [{ name: "balance", type: "ATTRIBUTE_TYPE_INTEGER" }])),
    ).toThrowError(expect.objectContaining({ code: "ERROR_CODE_SCHEMA_COMPILE", grpcCode: 13 }));
    // macro variables are declared inside the comprehension
    expect(() =>
      compileRule(rule("tags.all(t, t != '')", [{ name: "tags", type: "ATTRIBUTE_TYPE_STRING_ARRAY" }])),
    ).not.toThrow();
  });
});
