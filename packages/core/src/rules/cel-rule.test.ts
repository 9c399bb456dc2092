import { describe, expect, it } from "vitest";
import type { RuleDefinition } from "../schema/ast.ts";
import { MAX_PATTERN_LENGTH, MAX_RULE_COST } from "./cel-budget.ts";
import { MAX_CEL_CODE_POINTS, MAX_CEL_DEPTH } from "./cel-limits.ts";
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

describe("CEL work limits", () => {
  const items = Array.from({ length: 200 }, (_, i) => i);
  const costError = {
    code: "ERROR_CODE_EXECUTION",
    grpcCode: 8,
    message: `failed to evaluate expression: cost limit exceeded (${MAX_RULE_COST})`,
  };
  const thrown = (f: () => unknown): unknown => {
    try {
      f();
    } catch (e) {
      return e;
    }
    return undefined;
  };

  it("comprehensions within the budget evaluate as before", () => {
    // 200 x 200 = 40,000 iterations: under the budget
    const r = compileRule(rule("context.data.l.all(x, context.data.l.exists(y, y == x))", []));
    expect(r.evaluate([], { l: items })).toBe(true);
    const filter = compileRule(rule("context.data.l.filter(x, x > 100).size() == 99", []));
    expect(filter.evaluate([], { l: items })).toBe(true);
  });

  it("nested comprehensions over a context list stop at the budget with RESOURCE_EXHAUSTED", () => {
    // 200^3 = 8,000,000 iterations without a limit (seconds); the budget stops it after MAX_RULE_COST
    const r = compileRule(
      rule("context.data.l.all(x, context.data.l.all(y, context.data.l.all(z, x + y + z >= 0)))", []),
    );
    expect(thrown(() => r.evaluate([], { l: items }))).toMatchObject(costError);
    // an error inside `||` that another branch would absorb is still the cost error
    const absorbed = compileRule(
      rule("context.data.l.all(x, context.data.l.all(y, context.data.l.all(z, z >= 0))) || true", []),
    );
    expect(thrown(() => absorbed.evaluate([], { l: items }))).toMatchObject(costError);
    // the budget is per evaluation: a cheap evaluation right after still answers
    const cheap = compileRule(rule("context.data.l.exists(x, x == 199)", []));
    expect(cheap.evaluate([], { l: items })).toBe(true);
  });

  it("matches refuses a pattern over MAX_PATTERN_LENGTH and charges text x pattern length", () => {
    const r = compileRule(rule("context.data.text.matches(context.data.pattern)", []));
    expect(r.evaluate([], { text: "abc", pattern: "^a.c$" })).toBe(true);
    const long = "a".repeat(MAX_PATTERN_LENGTH + 1);
    expect(thrown(() => r.evaluate([], { text: "a", pattern: long }))).toMatchObject({
      code: "ERROR_CODE_EXECUTION",
      grpcCode: 13,
      message: `failed to evaluate expression: regular expression longer than ${MAX_PATTERN_LENGTH} characters`,
    });
    const longest = "a".repeat(MAX_PATTERN_LENGTH);
    expect(r.evaluate([], { text: longest, pattern: longest })).toBe(true);
    // 1 MB of text against a 1024-character pattern: 1e6 units, over the budget
    expect(thrown(() => r.evaluate([], { text: "b".repeat(1_000_000), pattern: longest }))).toMatchObject(
      costError,
    );
  });
});

describe("CEL rule size limits (cel-go's parser defaults): refused at compile, never a stack overflow", () => {
  const x = [{ name: "x", type: "ATTRIBUTE_TYPE_INTEGER" as const }];
  const compileMessage = (body: string) => {
    let e: unknown;
    try {
      compileRule(rule(body, x));
    } catch (error) {
      e = error;
    }
    expect(e).toMatchObject({ code: "ERROR_CODE_SCHEMA_COMPILE", grpcCode: 13 });
    return (e as Error).message;
  };
  const recursion = `3:1: expression recursion limit exceeded: ${MAX_CEL_DEPTH}`;

  it.each([
    ["1,000 nested parentheses", `${"(".repeat(1000)}x > 1${")".repeat(1000)}`],
    ["10,000 `+ 1` terms", `x${" + 1".repeat(10_000)} > 1`],
    ["context.data followed by 10,000 `.a`", `context.data${".a".repeat(10_000)} == 1`],
    ["251 nested lists", `${"[".repeat(251)}${"]".repeat(251)} == [] || x > 1`],
    ["251 `+ 1` terms", `x${" + 1".repeat(251)} > 1`],
  ])("%s", (_, body) => {
    expect(compileMessage(body)).toBe(recursion);
  });

  it("a 1 MB string literal names the code point limit", () => {
    const body = `"${"a".repeat(1_000_000)}" == "a" || x > 1`;
    expect(compileMessage(body)).toBe(
      `3:1: expression code point size exceeds limit: size: ${body.length}, limit ${MAX_CEL_CODE_POINTS}`,
    );
  });

  it("brackets inside string literals do not count; bodies at the limits compile and evaluate", () => {
    const quoted = compileRule(rule(`"${"(".repeat(400)}" != "" && x > 1`, x));
    expect(quoted.evaluate([2n], {})).toBe(true);
    const parens = compileRule(rule(`${"(".repeat(200)}x > 1${")".repeat(200)}`, x));
    expect(parens.evaluate([2n], {})).toBe(true);
    // the parser folds pairs of negations (as cel-go does): no depth
    expect(compileRule(rule(`${"!".repeat(5000)}(x > 1)`, x)).evaluate([2n], {})).toBe(true);
    const sum = compileRule(rule(`x${" + 1".repeat(200)} > 200`, x));
    expect(sum.evaluate([1n], {})).toBe(true);
    expect(sum.evaluate([0n], {})).toBe(false);
    const literal = `"${"a".repeat(MAX_CEL_CODE_POINTS - 20)}"`;
    expect(compileRule(rule(`${literal} != "" && x > 1`, x)).evaluate([2n], {})).toBe(true);
  });

  it("a long && chain compiles: cel-go and @bufbuild/cel balance it", () => {
    const body = Array.from({ length: 2000 }, (_, i) => `x > ${i}`).join(" && ");
    const r = compileRule(rule(body, x));
    expect(r.evaluate([2000n], {})).toBe(true);
    expect(r.evaluate([1999n], {})).toBe(false);
  });
});
