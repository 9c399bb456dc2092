/**
 * Rule calls of one request: a call binds the entity's attributes as arguments (stored first, then contextual,
 * then zero values, as Permify does; contextual first when the request asks: AuthZEN's properties) and is evaluated once per (rule, entity); rule errors become the evaluation's error.
 */
import { FALSE, PENDING, TRUE, type WalkResult } from "../../compile/index.ts";
import type { Attribute } from "../../model.ts";
import { type CompiledRule, type RuleArgument, ruleArgument, zeroArgument } from "../../rules/index.ts";

/** What a rule call reads from its evaluation. */
export interface RuleReads {
  readonly data: Record<string, unknown>;
  /** A contextual attribute wins over a stored one in a rule's arguments. */
  readonly contextualAttributesFirst: boolean;
  storedAttribute(type: string, id: string, name: string): Attribute | null | undefined;
  contextAttribute(type: string, id: string, name: string): Attribute | undefined;
  fail(error: unknown): WalkResult;
}

export class RuleCalls {
  /** Results by (rule, type, id). */
  #results: Map<string, WalkResult> | undefined = undefined;

  reset(): void {
    this.#results = undefined;
  }

  /** PENDING while a parameter's stored attribute is not loaded. */
  call(reads: RuleReads, rule: CompiledRule, type: string, id: string): WalkResult {
    const cacheKey = `${rule.name}\u0000${type}\u0000${id}`;
    if (this.#results === undefined) this.#results = new Map();
    const cached = this.#results.get(cacheKey);
    if (cached !== undefined) return cached;
    const params = rule.parameters;
    let loading = false;
    for (let i = 0; i < params.length; i++) {
      if (reads.storedAttribute(type, id, params[i].name) === undefined) loading = true;
    }
    if (loading) return PENDING;
    const args: RuleArgument[] = [];
    for (let i = 0; i < params.length; i++) {
      const p = params[i];
      const a = reads.contextualAttributesFirst
        ? (reads.contextAttribute(type, id, p.name) ?? reads.storedAttribute(type, id, p.name))
        : (reads.storedAttribute(type, id, p.name) ?? reads.contextAttribute(type, id, p.name));
      args.push(a ? ruleArgument(p.type, a.value.data) : zeroArgument(p.type));
    }
    let result: WalkResult;
    try {
      result = rule.evaluate(args, reads.data) ? TRUE : FALSE;
    } catch (e) {
      return reads.fail(e);
    }
    this.#results?.set(cacheKey, result);
    return result;
  }
}

/** A rule checked by its own name (Permify's checkDirectCall without arguments): no parameter is bound. */
export function callRuleByName(reads: RuleReads, rule: CompiledRule): WalkResult {
  try {
    return rule.evaluateUnbound(reads.data) ? TRUE : FALSE;
  } catch (e) {
    return reads.fail(e);
  }
}
