/**
 * A schema `rule` compiled once into a reusable CEL evaluator (@bufbuild/cel). Variables are the rule's parameters
 * with their CEL types plus `context` (dyn; only `context.data` is populated, like Permify).
 *
 * @bufbuild/cel exports no type checker, so compile-time checks are done on the parsed AST here: undeclared
 * identifiers (`undeclared reference to 'vip'`) and an obviously non-boolean result type. Anything the AST cannot
 * tell is checked at run time (a non-bool result is an evaluation error).
 *
 * Work is bounded (@bufbuild/cel has no cost limit of its own): every comprehension's loop condition is wrapped in
 * a call that spends one unit of the evaluation's budget per iteration, and its range in one that spends a unit per
 * element when the comprehension starts, `matches` spends units for the text and
 * pattern lengths and refuses patterns longer than MAX_PATTERN_LENGTH (RE2 compile time grows faster than the
 * pattern), and compiled patterns are cached. Over budget: RESOURCE_EXHAUSTED.
 */
import {
  CelScalar,
  type CelType,
  type CelValue,
  celEnv,
  celFunc,
  isCelError,
  isCelList,
  isCelMap,
  listType,
  parse,
  plan,
} from "@bufbuild/cel";
import { RE2JS } from "@bufbuild/re2";
import { PembaError } from "../errors.ts";
import type { AttributeData, AttributeType } from "../model.ts";
import type { RuleDefinition } from "../schema/ast.ts";

/** A CEL input value for one rule parameter. */
export type RuleArgument = bigint | number | string | boolean | bigint[] | number[] | string[] | boolean[];

export interface CompiledRule {
  readonly name: string;
  readonly parameters: readonly { name: string; type: AttributeType }[];
  /** Evaluates the body; `args[i]` binds parameter i. Throws PembaError ERROR_CODE_EXECUTION (gRPC 13). */
  evaluate(args: readonly RuleArgument[], data: Record<string, unknown>): boolean;
  /**
   * Evaluates the body with no parameter bound: a rule checked by its own name, which Permify runs without
   * arguments, so reading a parameter fails with cel-go's `no such attribute(s): <name>`.
   */
  evaluateUnbound(data: Record<string, unknown>): boolean;
}

const celTypeOf = (t: AttributeType): CelType => {
  switch (t) {
    case "ATTRIBUTE_TYPE_BOOLEAN":
      return CelScalar.BOOL;
    case "ATTRIBUTE_TYPE_STRING":
      return CelScalar.STRING;
    case "ATTRIBUTE_TYPE_INTEGER":
      return CelScalar.INT;
    case "ATTRIBUTE_TYPE_DOUBLE":
      return CelScalar.DOUBLE;
    case "ATTRIBUTE_TYPE_BOOLEAN_ARRAY":
      return listType(CelScalar.BOOL);
    case "ATTRIBUTE_TYPE_STRING_ARRAY":
      return listType(CelScalar.STRING);
    case "ATTRIBUTE_TYPE_INTEGER_ARRAY":
      return listType(CelScalar.INT);
    case "ATTRIBUTE_TYPE_DOUBLE_ARRAY":
      return listType(CelScalar.DOUBLE);
  }
};

/** cel-go's type names, for the "must result in a boolean type not X" message. */
const celTypeName: Record<AttributeType, string> = {
  ATTRIBUTE_TYPE_BOOLEAN: "bool",
  ATTRIBUTE_TYPE_STRING: "string",
  ATTRIBUTE_TYPE_INTEGER: "int",
  ATTRIBUTE_TYPE_DOUBLE: "double",
  ATTRIBUTE_TYPE_BOOLEAN_ARRAY: "list(bool)",
  ATTRIBUTE_TYPE_STRING_ARRAY: "list(string)",
  ATTRIBUTE_TYPE_INTEGER_ARRAY: "list(int)",
  ATTRIBUTE_TYPE_DOUBLE_ARRAY: "list(double)",
};

/** The value a missing attribute takes as a rule argument (Permify: the declared type's zero value). */
export function zeroArgument(t: AttributeType): RuleArgument {
  switch (t) {
    case "ATTRIBUTE_TYPE_BOOLEAN":
      return false;
    case "ATTRIBUTE_TYPE_STRING":
      return "";
    case "ATTRIBUTE_TYPE_INTEGER":
      return 0n;
    case "ATTRIBUTE_TYPE_DOUBLE":
      return 0;
    default:
      return [];
  }
}

/** An attribute value as a CEL input: integers become CEL int (bigint), doubles stay numbers. */
export function ruleArgument(t: AttributeType, data: AttributeData): RuleArgument {
  if (t === "ATTRIBUTE_TYPE_INTEGER") return BigInt(Math.trunc(Number(data)));
  if (t === "ATTRIBUTE_TYPE_INTEGER_ARRAY")
    return (data as number[]).map((n) => BigInt(Math.trunc(Number(n))));
  return data as RuleArgument;
}

/** Units one rule evaluation may spend: an iteration of a comprehension is 1, as is an element of its range. */
export const MAX_RULE_COST = 100_000;
/** The longest pattern `matches` compiles. */
export const MAX_PATTERN_LENGTH = 1024;
/** `matches` spends (text length x pattern length) / this many units. */
const MATCH_CHARS_PER_UNIT = 1024;

/** The budget left to the evaluation running now (evaluation is synchronous: one at a time). */
let budget = 0;

/** Spends units; false once the budget is gone (the evaluation then fails whatever its result). */
function spend(units: number): boolean {
  budget -= units;
  return budget >= 0;
}

class CostLimitExceeded extends Error {
  constructor() {
    super(`cost limit exceeded (${MAX_RULE_COST})`);
  }
}

/** Not CEL identifiers: rule bodies cannot call them. */
const STEP = "@pemba_step";
const RANGE = "@pemba_range";
/** Spends 1 unit per iteration (wraps a comprehension's loop condition). */
const step = celFunc(STEP, [CelScalar.BOOL], CelScalar.BOOL, (condition: boolean) => {
  if (!spend(1)) throw new CostLimitExceeded();
  return condition;
});
/** Spends 1 unit per element of a comprehension's range when it starts (building the range walks it). */
const range = celFunc(RANGE, [CelScalar.DYN], CelScalar.DYN, (value: CelValue) => {
  if (!spend(isCelList(value) || isCelMap(value) ? value.size : 1)) throw new CostLimitExceeded();
  return value;
});

/** What @bufbuild/cel's `re2` option compiles a pattern to (its type is not exported). */
interface Matcher {
  test(text: string): boolean;
}

/** Compiled patterns by source (RE2 programs; a rule called per entity compiles its pattern once). */
const patterns = new Map<string, Matcher>();
const MAX_CACHED_PATTERNS = 256;

const re2 = {
  compile(pattern: string): Matcher {
    if (pattern.length > MAX_PATTERN_LENGTH)
      throw new Error(`regular expression longer than ${MAX_PATTERN_LENGTH} characters`);
    let compiled = patterns.get(pattern);
    if (compiled === undefined) {
      compiled = RE2JS.compile(pattern);
      if (patterns.size >= MAX_CACHED_PATTERNS) patterns.delete(patterns.keys().next().value as string);
      patterns.set(pattern, compiled);
    }
    const matcher = compiled;
    return {
      test(text: string): boolean {
        if (!spend(Math.ceil((text.length * pattern.length) / MATCH_CHARS_PER_UNIT)))
          throw new CostLimitExceeded();
        return matcher.test(text);
      },
    };
  },
};

/** `fn(node)`, keeping the node's id (errors point at the metered expression). */
const meteredCall = (fn: string, node: AstNode): AstNode =>
  ({ ...node, exprKind: { case: "callExpr", value: { function: fn, args: [node] } } }) as AstNode;

/** Wraps every comprehension's loop condition in STEP and its range in RANGE (the planner evaluates it once per iteration). */
function meterComprehensions(node: AstNode | undefined): void {
  if (!node) return;
  const k = node.exprKind;
  switch (k.case) {
    case "selectExpr":
      meterComprehensions((k.value as { operand?: AstNode }).operand);
      return;
    case "callExpr": {
      const c = k.value as { target?: AstNode; args: AstNode[] };
      meterComprehensions(c.target);
      for (const a of c.args) meterComprehensions(a);
      return;
    }
    case "listExpr":
      for (const e of (k.value as { elements: AstNode[] }).elements) meterComprehensions(e);
      return;
    case "structExpr":
      for (const e of (k.value as { entries: { mapKey?: AstNode; value?: AstNode }[] }).entries) {
        meterComprehensions(e.mapKey);
        meterComprehensions(e.value);
      }
      return;
    case "comprehensionExpr": {
      const c = k.value as Record<
        "iterRange" | "accuInit" | "loopCondition" | "loopStep" | "result",
        AstNode
      >;
      for (const part of [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result])
        meterComprehensions(part);
      c.loopCondition = meteredCall(STEP, c.loopCondition);
      c.iterRange = meteredCall(RANGE, c.iterRange);
      return;
    }
    default:
      return;
  }
}

const ARITHMETIC = new Set(["_+_", "_-_", "_*_", "_/_", "_%_", "-_"]);

interface AstNode {
  exprKind: { case: string | undefined; value?: unknown };
}

const compileError = (rule: RuleDefinition, message: string) =>
  new PembaError("ERROR_CODE_SCHEMA_COMPILE", `${rule.pos.line}:${rule.pos.column}: ${message}`, {
    grpcCode: 13,
  });

/** Walks the parsed AST; throws on an identifier that is neither a parameter, `context`, nor a macro variable. */
function checkIdentifiers(rule: RuleDefinition, root: AstNode, declared: Set<string>): void {
  const visit = (node: AstNode | undefined, bound: ReadonlySet<string>): void => {
    if (!node) return;
    const k = node.exprKind;
    switch (k.case) {
      case "identExpr": {
        const name = (k.value as { name: string }).name;
        if (!declared.has(name) && !bound.has(name))
          throw compileError(rule, `undeclared reference to '${name}'`);
        return;
      }
      case "selectExpr":
        visit((k.value as { operand?: AstNode }).operand, bound);
        return;
      case "callExpr": {
        const c = k.value as { target?: AstNode; args: AstNode[] };
        visit(c.target, bound);
        for (const a of c.args) visit(a, bound);
        return;
      }
      case "listExpr":
        for (const e of (k.value as { elements: AstNode[] }).elements) visit(e, bound);
        return;
      case "structExpr":
        for (const e of (k.value as { entries: { mapKey?: AstNode; value?: AstNode }[] }).entries) {
          visit(e.mapKey, bound);
          visit(e.value, bound);
        }
        return;
      case "comprehensionExpr": {
        const c = k.value as {
          iterVar: string;
          iterVar2?: string;
          accuVar: string;
          iterRange?: AstNode;
          accuInit?: AstNode;
          loopCondition?: AstNode;
          loopStep?: AstNode;
          result?: AstNode;
        };
        visit(c.iterRange, bound);
        visit(c.accuInit, bound);
        const inner = new Set(bound);
        inner.add(c.accuVar);
        const loop = new Set(inner);
        loop.add(c.iterVar);
        if (c.iterVar2) loop.add(c.iterVar2);
        visit(c.loopCondition, loop);
        visit(c.loopStep, loop);
        visit(c.result, inner);
        return;
      }
      default:
        return;
    }
  };
  visit(root, new Set());
}

/** The result type when the AST alone tells it is not bool; undefined when it is bool or unknown. */
function staticNonBoolType(root: AstNode, params: Map<string, AttributeType>): string | undefined {
  const typeOf = (node: AstNode | undefined): string | undefined => {
    if (!node) return undefined;
    const k = node.exprKind;
    if (k.case === "constExpr") {
      const c = (k.value as { constantKind: { case: string } }).constantKind.case;
      const names: Record<string, string> = {
        boolValue: "bool",
        int64Value: "int",
        uint64Value: "uint",
        doubleValue: "double",
        stringValue: "string",
        bytesValue: "bytes",
        nullValue: "null_type",
      };
      return names[c];
    }
    if (k.case === "identExpr") {
      const t = params.get((k.value as { name: string }).name);
      return t ? celTypeName[t] : undefined;
    }
    if (k.case === "listExpr") return "list";
    if (k.case === "callExpr") {
      const c = k.value as { function: string; args: AstNode[] };
      if (ARITHMETIC.has(c.function)) return typeOf(c.args[0]);
    }
    return undefined;
  };
  const t = typeOf(root);
  return t === "bool" ? undefined : t;
}

/** Compiles a rule once. Throws PembaError ERROR_CODE_SCHEMA_COMPILE (gRPC 13) on a CEL compile error. */
export function compileRule(rule: RuleDefinition): CompiledRule {
  const variables: Record<string, CelType> = { context: CelScalar.DYN };
  const params = new Map<string, AttributeType>();
  for (const p of rule.parameters) {
    variables[p.name] = celTypeOf(p.type);
    params.set(p.name, p.type);
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rule.expression);
  } catch (e) {
    throw compileError(rule, (e as Error).message);
  }
  checkIdentifiers(rule, parsed.expr as AstNode, new Set(Object.keys(variables)));
  const nonBool = staticNonBoolType(parsed.expr as AstNode, params);
  if (nonBool !== undefined)
    throw compileError(rule, `rule expression must result in a boolean type not ${nonBool}`);
  meterComprehensions(parsed.expr as AstNode);
  const planned = plan(celEnv({ variables, funcs: [step, range], re2 }), parsed) as (
    ctx: Record<string, unknown>,
  ) => unknown;
  const run = (bindings: Record<string, unknown>): unknown => {
    budget = MAX_RULE_COST;
    const out = planned(bindings);
    if (budget < 0) throw costLimitError();
    return out;
  };
  const names = rule.parameters.map((p) => p.name);
  const result = (out: unknown): boolean => {
    if (typeof out === "boolean") return out;
    if (isCelError(out)) throw evaluationError(out.message);
    throw evaluationError(`expected a boolean result, got ${typeof out}`);
  };
  // @bufbuild/cel names no variable in its "unresolved attribute" error; cel-go names the first one it reads,
  // which is the leftmost parameter in the body (operands are evaluated left to right).
  const firstRead = firstParameterRead(parsed.expr as AstNode, new Set(names));
  return {
    name: rule.name,
    parameters: rule.parameters,
    evaluate(args, data) {
      const bindings: Record<string, unknown> = { context: { data } };
      for (let i = 0; i < names.length; i++) bindings[names[i]] = args[i];
      return result(run(bindings));
    },
    evaluateUnbound(data) {
      const out = run({ context: { data } });
      if (isCelError(out) && out.message === "unresolved attribute" && firstRead !== undefined)
        throw evaluationError(`no such attribute(s): ${firstRead}`);
      return result(out);
    },
  };
}

/** The leftmost identifier of the body that names a parameter (pre-order, operands left to right). */
function firstParameterRead(root: AstNode, parameters: ReadonlySet<string>): string | undefined {
  const visit = (node: AstNode | undefined): string | undefined => {
    if (!node) return undefined;
    const k = node.exprKind;
    switch (k.case) {
      case "identExpr": {
        const name = (k.value as { name: string }).name;
        return parameters.has(name) ? name : undefined;
      }
      case "selectExpr":
        return visit((k.value as { operand?: AstNode }).operand);
      case "callExpr": {
        const c = k.value as { target?: AstNode; args: AstNode[] };
        const first = visit(c.target);
        if (first !== undefined) return first;
        for (const a of c.args) {
          const found = visit(a);
          if (found !== undefined) return found;
        }
        return undefined;
      }
      case "listExpr":
        for (const e of (k.value as { elements: AstNode[] }).elements) {
          const found = visit(e);
          if (found !== undefined) return found;
        }
        return undefined;
      case "comprehensionExpr":
        return visit((k.value as { iterRange?: AstNode }).iterRange);
      default:
        return undefined;
    }
  };
  return visit(root);
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

/** Permify's wording: cel-go says `no such key: x` where @bufbuild/cel says `field not found: x`. */
function evaluationError(message: string): PembaError {
  const text = message.replace(/^field not found: /, "no such key: ");
  return new PembaError("ERROR_CODE_EXECUTION", `failed to evaluate expression: ${text}`, { grpcCode: 13 });
}
