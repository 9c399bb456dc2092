/**
 * A schema `rule` compiled once into a reusable CEL evaluator (@bufbuild/cel). Variables are the rule's parameters
 * with their CEL types plus `context` (dyn; only `context.data` is populated, like Permify).
 *
 * @bufbuild/cel exports no type checker, so compile-time checks are done on the parsed AST here: undeclared
 * identifiers (`undeclared reference to 'vip'`) and an obviously non-boolean result type. Anything the AST cannot
 * tell is checked at run time (a non-bool result is an evaluation error).
 *
 * Work is bounded: see cel-budget.ts; so is the body's size and nesting (cel-limits.ts).
 */
import { CelScalar, type CelType, celEnv, isCelError, listType, parse, plan } from "@bufbuild/cel";
import { PembaError } from "../errors.ts";
import type { AttributeData, AttributeType } from "../model.ts";
import type { RuleDefinition } from "../schema/ast.ts";
import { type AstNode, type Comprehension, childrenOf } from "./cel-ast.ts";
import { meterComprehensions, RuleMeter } from "./cel-budget.ts";
import { expressionTextLimit, recursionLimitMessage, treeTooDeep } from "./cel-limits.ts";

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

const ARITHMETIC = new Set(["_+_", "_-_", "_*_", "_/_", "_%_", "-_"]);

const compileError = (rule: RuleDefinition, message: string) =>
  new PembaError("ERROR_CODE_SCHEMA_COMPILE", `${rule.pos.line}:${rule.pos.column}: ${message}`, {
    grpcCode: 13,
  });

/** Walks the parsed AST; throws on an identifier that is neither a parameter, `context`, nor a macro variable. */
function checkIdentifiers(rule: RuleDefinition, root: AstNode, declared: Set<string>): void {
  const visit = (node: AstNode | undefined, bound: ReadonlySet<string>): void => {
    if (!node) return;
    const k = node.exprKind;
    if (k.case === "identExpr") {
      const name = (k.value as { name: string }).name;
      if (!declared.has(name) && !bound.has(name))
        throw compileError(rule, `undeclared reference to '${name}'`);
      return;
    }
    if (k.case !== "comprehensionExpr") {
      for (const child of childrenOf(node)) visit(child, bound);
      return;
    }
    const c = k.value as Comprehension;
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
  const tooLarge = expressionTextLimit(rule.expression);
  if (tooLarge !== undefined) throw compileError(rule, tooLarge);
  let parsed: ReturnType<typeof parse>;
  let planned: (ctx: Record<string, unknown>) => unknown;
  const meter = new RuleMeter();
  try {
    try {
      parsed = parse(rule.expression);
    } catch (e) {
      if (e instanceof RangeError) throw e;
      throw compileError(rule, (e as Error).message);
    }
    if (treeTooDeep(parsed.expr as AstNode)) throw compileError(rule, recursionLimitMessage);
    checkIdentifiers(rule, parsed.expr as AstNode, new Set(Object.keys(variables)));
    const nonBool = staticNonBoolType(parsed.expr as AstNode, params);
    if (nonBool !== undefined)
      throw compileError(rule, `rule expression must result in a boolean type not ${nonBool}`);
    meterComprehensions(parsed.expr as AstNode);
    planned = plan(celEnv({ variables, funcs: meter.funcs, re2: meter.re2 }), parsed) as (
      ctx: Record<string, unknown>,
    ) => unknown;
  } catch (e) {
    // the limits above keep every walk within the stack; a stack smaller than Node's default still ends here
    if (e instanceof RangeError) throw compileError(rule, recursionLimitMessage);
    throw e;
  }
  const run = (bindings: Record<string, unknown>): unknown => meter.run(() => planned(bindings));
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
    if (k.case === "identExpr") {
      const name = (k.value as { name: string }).name;
      return parameters.has(name) ? name : undefined;
    }
    // a comprehension's own variables are not parameters: only its range is read first
    if (k.case === "comprehensionExpr") return visit((k.value as Comprehension).iterRange);
    if (k.case === "structExpr") return undefined;
    for (const child of childrenOf(node)) {
      const found = visit(child);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return visit(root);
}

/** Permify's wording: cel-go says `no such key: x` where @bufbuild/cel says `field not found: x`. */
function evaluationError(message: string): PembaError {
  const text = message.replace(/^field not found: /, "no such key: ");
  return new PembaError("ERROR_CODE_EXECUTION", `failed to evaluate expression: ${text}`, { grpcCode: 13 });
}
