/**
 * Bounded work for rule evaluation (@bufbuild/cel has no cost limit of its own). Every comprehension's loop
 * condition is wrapped in a call that spends one unit of the evaluation's budget per iteration, and its range in
 * one that spends a unit per element when the comprehension starts; `matches` spends units for the text and pattern
 * lengths and refuses patterns longer than MAX_PATTERN_LENGTH (RE2 compile time grows faster than the pattern);
 * compiled patterns are cached. Over budget: RESOURCE_EXHAUSTED.
 */
import { CelScalar, type CelValue, celFunc, isCelList, isCelMap } from "@bufbuild/cel";
import { RE2JS } from "@bufbuild/re2";
import { PembaError } from "../errors.ts";
import { type AstNode, type Comprehension, childrenOf } from "./cel-ast.ts";

/** Units one rule evaluation may spend: an iteration of a comprehension is 1, as is an element of its range. */
export const MAX_RULE_COST = 100_000;
/** The longest pattern `matches` compiles. */
export const MAX_PATTERN_LENGTH = 1024;
/** `matches` spends (text length x pattern length) / this many units. */
const MATCH_CHARS_PER_UNIT = 1024;

class CostLimitExceeded extends Error {
  constructor() {
    super(`cost limit exceeded (${MAX_RULE_COST})`);
  }
}

/** RESOURCE_EXHAUSTED (HTTP 429), as for the other limits on one request's work. */
const costLimitError = (): PembaError =>
  new PembaError(
    "ERROR_CODE_EXECUTION",
    `failed to evaluate expression: cost limit exceeded (${MAX_RULE_COST})`,
    {
      grpcCode: 8,
    },
  );

/** Not CEL identifiers: rule bodies cannot call them. */
const STEP = "@pemba_step";
const RANGE = "@pemba_range";

/** What @bufbuild/cel's `re2` option compiles a pattern to (its type is not exported). */
interface Matcher {
  test(text: string): boolean;
}

const MAX_CACHED_PATTERNS = 256;

/**
 * The meter of one compiled rule: the functions and RE2 engine its CEL environment calls, and the budget of the
 * evaluation running now. A rule's evaluation is synchronous, so one budget per rule is never shared by two
 * evaluations at once; no state lives at module level.
 */
export class RuleMeter {
  /** The budget left to the evaluation running now. */
  #budget = 0;
  /** Compiled patterns by source (RE2 programs; a rule called per entity compiles its pattern once). */
  readonly #patterns = new Map<string, Matcher>();

  /** Spends units; false once the budget is gone (the evaluation then fails whatever its result). */
  #spend(units: number): boolean {
    this.#budget -= units;
    return this.#budget >= 0;
  }

  /** The functions metered expressions call (pass to celEnv's `funcs`). */
  readonly funcs = [
    // 1 unit per iteration (wraps a comprehension's loop condition)
    celFunc(STEP, [CelScalar.BOOL], CelScalar.BOOL, (condition: boolean) => {
      if (!this.#spend(1)) throw new CostLimitExceeded();
      return condition;
    }),
    // 1 unit per element of a comprehension's range when it starts (building the range walks it)
    celFunc(RANGE, [CelScalar.DYN], CelScalar.DYN, (value: CelValue) => {
      if (!this.#spend(isCelList(value) || isCelMap(value) ? value.size : 1)) throw new CostLimitExceeded();
      return value;
    }),
  ];

  /** The RE2 engine for celEnv's `re2` option: @bufbuild/cel's own, with the length cap, the cache and the cost. */
  readonly re2 = {
    compile: (pattern: string): Matcher => {
      if (pattern.length > MAX_PATTERN_LENGTH)
        throw new Error(`regular expression longer than ${MAX_PATTERN_LENGTH} characters`);
      const patterns = this.#patterns;
      let compiled = patterns.get(pattern);
      if (compiled === undefined) {
        compiled = RE2JS.compile(pattern);
        if (patterns.size >= MAX_CACHED_PATTERNS) patterns.delete(patterns.keys().next().value as string);
        patterns.set(pattern, compiled);
      }
      const matcher = compiled;
      return {
        test: (text: string): boolean => {
          if (!this.#spend(Math.ceil((text.length * pattern.length) / MATCH_CHARS_PER_UNIT)))
            throw new CostLimitExceeded();
          return matcher.test(text);
        },
      };
    },
  };

  /** Runs one evaluation with a full budget; throws the cost error when it ran out, whatever the result. */
  run<T>(evaluate: () => T): T {
    this.#budget = MAX_RULE_COST;
    const out = evaluate();
    if (this.#budget < 0) throw costLimitError();
    return out;
  }
}

/** `fn(node)`, keeping the node's id (errors point at the metered expression). */
const meteredCall = (fn: string, node: AstNode | undefined): AstNode =>
  ({ ...node, exprKind: { case: "callExpr", value: { function: fn, args: [node] } } }) as AstNode;

/** Wraps every comprehension's loop condition in STEP and its range in RANGE, in place. */
export function meterComprehensions(node: AstNode | undefined): void {
  if (!node) return;
  for (const child of childrenOf(node)) meterComprehensions(child);
  if (node.exprKind.case !== "comprehensionExpr") return;
  const c = node.exprKind.value as Comprehension;
  c.loopCondition = meteredCall(STEP, c.loopCondition);
  c.iterRange = meteredCall(RANGE, c.iterRange);
}
