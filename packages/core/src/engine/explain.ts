/**
 * explain (a Pemba extension beside Permify's API): a check's decision and its proof.
 *
 * The walk mirrors the engine's (evaluation.ts and the compiled closures): the same order of branches, the same
 * short cuts (a union stops at its first grant, an intersection at its first denial), the subject itself as a
 * userset, the depth, the memo of decided sub-problems and the cycle cut; reads go through an Evaluation, so they
 * batch and cache as a check's do. It runs in two phases:
 *
 * 1. decide: passes over the schema's expressions (not the compiled closures, which cannot be traced) until every
 *    read is loaded, memoizing decided sub-problems; this is the decision, `can`.
 * 2. prove: the walk again, over loaded reads and the memo, building the proof. A node ALLOWED shows the path that
 *    granted it (the first granting branch, as the check took it); a node DENIED shows every branch tried and why
 *    each failed. At most `maxNodes` nodes are built; past that a node is replaced by a `cut` node (its result is
 *    known, its proof is not shown) and `truncated` is true. A sub-problem already on the walk path is a `cycle`
 *    node: a cycle cannot grant.
 *
 * Runtime-neutral (no Node built-in): the console runs it in the browser on a MemoryStore.
 */
import type { CompiledSchema, MemberRef, WalkResult } from "../compile/index.ts";
import { FAILED, FALSE, PENDING, TRUE } from "../compile/index.ts";
import { PembaError } from "../errors.ts";
import { attributeValueToWire } from "../http/convert.ts";
import type {
  Attribute,
  AttributeData,
  AttributeType,
  AttributeValue,
  CheckResult,
  Entity,
  Subject,
  Tuple,
} from "../model.ts";
import { tupleKey } from "../model.ts";
import { zeroArgument } from "../rules/index.ts";
import type { PermissionExpr } from "../schema/ast.ts";
import { MAX_NESTING, WalkPath } from "./evaluation/cycle.ts";
import { Memo } from "./evaluation/memo.ts";
import { Evaluation } from "./evaluation.ts";
import type { CheckQuery, EvaluationTarget } from "./types.ts";

/** What a proof node stands for. */
export type ProofKind =
  | "permission"
  | "relation"
  | "attribute"
  | "rule"
  | "tuple_to_userset"
  | "union"
  | "intersection"
  | "exclusion"
  | "direct"
  | "cycle"
  | "cut";

/** An attribute value in Permify's Any form. */
export type ProofValue = {
  "@type": string;
  data: unknown;
};

export interface ProofTuple {
  entity: Entity;
  relation: string;
  subject: Subject;
}

/**
 * One hop of a proof. `entity` and `name` are the sub-problem (`doc:1` and `edit`; for a tuple-to-userset node
 * `parent.view`, for an operation node the permission it belongs to). `tuple` is the stored or contextual tuple
 * that led to this node (`contextual` says which), `attribute` the attribute an attribute node read (absent when
 * none is stored), `rule` a rule call with its arguments. `children` is always present (empty for a leaf).
 */
export interface ProofNode {
  kind: ProofKind;
  entity: Entity;
  name: string;
  result: "ALLOWED" | "DENIED";
  tuple?: ProofTuple;
  attribute?: { entity: Entity; attribute: string; value: ProofValue };
  rule?: { name: string; expression: string; arguments: Record<string, ProofValue> };
  reason?: string;
  contextual?: boolean;
  children: ProofNode[];
}

/** The explain answer: the check answer plus the proof (also the HTTP body). */
export interface ExplainResponse {
  can: CheckResult;
  metadata: { check_count: number };
  proof: ProofNode;
  /** True when some node was replaced by a `cut` node (the node budget was reached). */
  truncated: boolean;
}

/** A check's target plus the compiled schema it runs on. */
export interface ExplainTarget extends EvaluationTarget {
  schema: CompiledSchema;
}

export interface ExplainOptions {
  /** The most proof nodes built (DEFAULT_EXPLAIN_NODES); past it nodes are `cut`. */
  maxNodes?: number;
}

/** The most proof nodes an explain builds unless told otherwise. */
export const DEFAULT_EXPLAIN_NODES = 1000;

/** Thrown by the prove phase when it meets a read that is not loaded: the phase re-runs after a load. */
const NOT_LOADED = new Error("explain: read not loaded");

/** A parameter's zero value as JSON data (an integer's zero argument is a bigint). */
const zeroData = (type: AttributeType): AttributeData => {
  const zero = zeroArgument(type);
  return typeof zero === "bigint" ? Number(zero) : (zero as AttributeData);
};

const subjectString = (s: Subject): string => `${s.type}:${s.id}${s.relation ? `#${s.relation}` : ""}`;

const proofTuple = (t: Tuple): ProofTuple => ({
  entity: { type: t.entity.type, id: t.entity.id },
  relation: t.relation,
  subject: { type: t.subject.type, id: t.subject.id, relation: t.subject.relation },
});

class Explainer {
  readonly #schema: CompiledSchema;
  readonly #ev: Evaluation;
  readonly #subject: Subject;
  readonly #contextTuples: Set<string>;
  readonly #maxNodes: number;
  /** Sub-problem (slot, id) -> entry number, for the memo and the path. */
  readonly #entries = new Map<string, number>();
  readonly #memo = new Memo();
  readonly #path = new WalkPath();
  checkCount = 0;
  nodes = 0;
  truncated = false;
  /** In the prove phase the cycle cut comes before the memo: a proof never leads back onto its own path. */
  proving = false;

  constructor(
    schema: CompiledSchema,
    ev: Evaluation,
    subject: Subject,
    target: EvaluationTarget,
    max: number,
  ) {
    this.#schema = schema;
    this.#ev = ev;
    this.#subject = subject;
    this.#contextTuples = new Set((target.context?.tuples ?? []).map(tupleKey));
    this.#maxNodes = max;
  }

  get error(): unknown {
    return this.#ev.error;
  }

  resetPath(): void {
    this.#path.reset();
    this.nodes = 0;
    this.truncated = false;
  }

  #entry(ref: MemberRef, id: string): number {
    const key = `${ref.slot}\u0000${id}`;
    let e = this.#entries.get(key);
    if (e === undefined) {
      e = this.#entries.size;
      this.#entries.set(key, e);
      this.#memo.add(e);
    }
    return e;
  }

  #isSubject(type: string, id: string, name: string): boolean {
    const s = this.#subject;
    return s.relation === name && s.id === id && s.type === type;
  }

  // ---- decide: the engine's semantics, over the schema's expressions ----

  /** As Evaluation.invoke: depth, the subject itself, memo, cycle cut, nesting bound, then the member. */
  invoke(type: string, id: string, name: string, depth: number): WalkResult {
    this.checkCount++;
    const ev = this.#ev;
    if (depth < 0) return ev.fail(new PembaError("ERROR_CODE_DEPTH_NOT_ENOUGH"));
    if (this.#isSubject(type, id, name)) return TRUE;
    const ref = ev.member(type, name);
    if (ref === undefined) return ev.fail(new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND"));
    const e = this.#entry(ref, id);
    const path = this.#path;
    if (this.proving && path.cuts(e)) return FALSE;
    const decided = this.#memo.recall(e, depth);
    if (decided !== -1) return decided as WalkResult;
    if (path.cuts(e)) return FALSE;
    const at = path.length;
    if (at >= MAX_NESTING) return ev.fail(new PembaError("ERROR_CODE_DEPTH_NOT_ENOUGH"));
    const outer = path.enter(e);
    const result = this.#member(ref, id, depth - 1);
    if (path.leave(at, outer) && (result === TRUE || result === FALSE)) this.#memo.remember(e, depth, result);
    return result;
  }

  #member(ref: MemberRef, id: string, depth: number): WalkResult {
    const entity = this.#schema.entities.get(ref.type);
    const ev = this.#ev;
    switch (entity?.kinds.get(ref.name)) {
      case "relation":
        return this.#relation(ref.type, id, ref.name, depth);
      case "attribute":
        return ev.booleanAttribute(ref.type, id, ref.name);
      case "permission":
        return this.decideExpr(
          ref.type,
          id,
          entity?.definition.permissions[ref.name].child as PermissionExpr,
          depth,
        );
      default: {
        const rule = this.#schema.rules.get(ref.name);
        return rule === undefined ? FAILED : ev.callRuleByName(rule);
      }
    }
  }

  /** As the compiled relation closure: a tuple naming the subject grants, then each userset subject in turn. */
  #relation(type: string, id: string, name: string, depth: number): WalkResult {
    const tuples = this.#ev.tuples(type, id, name);
    if (tuples === undefined) return PENDING;
    if (this.#directTuple(tuples) !== undefined) return TRUE;
    let pending = false;
    let failed = false;
    for (const t of tuples) {
      const s = t.subject;
      if (s.relation === "") continue;
      const r = this.invoke(s.type, s.id, s.relation, depth);
      if (r === TRUE) return TRUE;
      if (r === PENDING) pending = true;
      else if (r === FAILED) failed = true;
    }
    return pending ? PENDING : failed ? FAILED : FALSE;
  }

  #directTuple(tuples: readonly Tuple[]): Tuple | undefined {
    const s = this.#subject;
    for (const t of tuples) {
      const u = t.subject;
      if (u.id === s.id && u.type === s.type && u.relation === s.relation) return t;
    }
    return undefined;
  }

  /** As the compiled expression closures (union, intersection, exclusion, tuple-to-userset, rule call). */
  decideExpr(type: string, id: string, expr: PermissionExpr, depth: number): WalkResult {
    switch (expr.kind) {
      case "rewrite": {
        const ra = this.decideExpr(type, id, expr.children[0], depth);
        if (expr.op === "union") {
          if (ra === TRUE) return TRUE;
          const rb = this.decideExpr(type, id, expr.children[1], depth);
          if (rb === TRUE) return TRUE;
          if (ra === PENDING || rb === PENDING) return PENDING;
          return ra === FAILED || rb === FAILED ? FAILED : FALSE;
        }
        if (expr.op === "intersection") {
          if (ra === FALSE) return FALSE;
          const rb = this.decideExpr(type, id, expr.children[1], depth);
          if (rb === FALSE) return FALSE;
          if (ra === PENDING || rb === PENDING) return PENDING;
          return ra === FAILED || rb === FAILED ? FAILED : TRUE;
        }
        if (ra === FALSE || ra === FAILED) return ra;
        const rb = this.decideExpr(type, id, expr.children[1], depth);
        if (rb === TRUE) return FALSE;
        if (ra === PENDING || rb === PENDING) return PENDING;
        return rb === FAILED ? FAILED : TRUE;
      }
      case "computedUserSet":
        return this.invoke(type, id, expr.relation, depth);
      case "computedAttribute":
        return this.invoke(type, id, expr.name, depth);
      case "tupleToUserSet": {
        const tuples = this.#ev.tuples(type, id, expr.tupleSet);
        if (tuples === undefined) return PENDING;
        let pending = false;
        let failed = false;
        for (const t of tuples) {
          const r = this.invoke(t.subject.type, t.subject.id, expr.computed, depth);
          if (r === TRUE) return TRUE;
          if (r === PENDING) pending = true;
          else if (r === FAILED) failed = true;
        }
        return pending ? PENDING : failed ? FAILED : FALSE;
      }
      case "call": {
        const rule = this.#schema.rules.get(expr.ruleName);
        return rule === undefined ? FAILED : this.#ev.callRule(rule, type, id);
      }
    }
  }

  // ---- prove: the proof over the decided walk ----

  /** A node of the proof, or a `cut` node once the budget is spent (undefined: build it). */
  #cut(entity: Entity, name: string, result: WalkResult): ProofNode | undefined {
    if (this.nodes < this.#maxNodes) {
      this.nodes++;
      return undefined;
    }
    this.truncated = true;
    return {
      kind: "cut",
      entity,
      name,
      result: result === TRUE ? "ALLOWED" : "DENIED",
      reason: `proof cut: ${this.#maxNodes} nodes shown`,
      children: [],
    };
  }

  #decided(r: WalkResult): WalkResult {
    if (r === PENDING) throw NOT_LOADED;
    if (r === FAILED) throw this.#ev.error;
    return r;
  }

  #node(kind: ProofKind, entity: Entity, name: string, result: WalkResult, hop?: Tuple): ProofNode {
    const node: ProofNode = {
      kind,
      entity,
      name,
      result: result === TRUE ? "ALLOWED" : "DENIED",
      children: [],
    };
    if (hop !== undefined) {
      node.tuple = proofTuple(hop);
      node.contextual = this.#contextTuples.has(tupleKey(hop));
    }
    return node;
  }

  /** The proof of the member `type:id#name` (with `depth` left), reached through the tuple `hop` if any. */
  proveMember(type: string, id: string, name: string, depth: number, hop?: Tuple): ProofNode {
    const entity = { type, id };
    const result = this.#decided(this.invoke(type, id, name, depth));
    const kind = this.#schema.entities.get(type)?.kinds.get(name);
    const cut = this.#cut(entity, name, result);
    if (cut !== undefined) return cut;
    if (this.#isSubject(type, id, name)) {
      const node = this.#node("direct", entity, name, result, hop);
      node.reason = `the subject is ${type}:${id}#${name} itself`;
      return node;
    }
    const ref = this.#ev.member(type, name) as MemberRef;
    const e = this.#entry(ref, id);
    const path = this.#path;
    if (path.includes(e)) {
      const node = this.#node("cycle", entity, name, FALSE, hop);
      node.reason = `cycle: ${type}:${id}#${name} is already on the path`;
      return node;
    }
    const at = path.length;
    const outer = path.enter(e);
    let node: ProofNode;
    try {
      if (kind === "relation") node = this.#proveRelation(entity, name, result, depth - 1, hop);
      else if (kind === "attribute") node = this.#proveAttribute(entity, name, result, hop);
      else if (kind === "permission") {
        node = this.#node("permission", entity, name, result, hop);
        const child = this.#schema.entities.get(type)?.definition.permissions[name].child as PermissionExpr;
        node.children.push(this.proveExpr(entity, name, child, depth - 1));
      } else {
        node = this.#node("rule", entity, name, result, hop);
        const rule = this.#schema.definition.rules[name];
        node.rule = { name, expression: rule.expression.trim(), arguments: {} };
      }
    } finally {
      path.leave(at, outer);
    }
    return node;
  }

  #proveRelation(entity: Entity, name: string, result: WalkResult, depth: number, hop?: Tuple): ProofNode {
    const node = this.#node("relation", entity, name, result, hop);
    const tuples = this.#ev.tuples(entity.type, entity.id, name);
    if (tuples === undefined) throw NOT_LOADED;
    const direct = this.#directTuple(tuples);
    if (direct !== undefined) {
      const leaf = this.#node("direct", entity, name, TRUE, direct);
      leaf.reason = `the tuple names the subject ${subjectString(this.#subject)}`;
      node.children.push(leaf);
      return node;
    }
    if (result === FALSE)
      node.reason = `no tuple ${entity.type}:${entity.id}#${name}@${subjectString(this.#subject)}`;
    for (const t of tuples) {
      const s = t.subject;
      if (s.relation === "") continue;
      if (result === TRUE && this.#decided(this.invoke(s.type, s.id, s.relation, depth)) !== TRUE) continue;
      node.children.push(this.proveMember(s.type, s.id, s.relation, depth, t));
      if (result === TRUE) break;
    }
    return node;
  }

  #proveAttribute(entity: Entity, name: string, result: WalkResult, hop?: Tuple): ProofNode {
    const node = this.#node("attribute", entity, name, result, hop);
    const ev = this.#ev;
    const contextual = ev.contextAttribute(entity.type, entity.id, name);
    const attribute = contextual ?? ev.storedAttribute(entity.type, entity.id, name);
    if (attribute === undefined) throw NOT_LOADED;
    if (attribute === null) {
      node.reason = `no attribute ${entity.type}:${entity.id}$${name} (false)`;
      return node;
    }
    node.attribute = { entity, attribute: name, value: attributeValueToWire(attribute.value) };
    node.contextual = contextual !== undefined;
    return node;
  }

  /** The proof of the expression `expr` of the permission `name` on `entity`. */
  proveExpr(entity: Entity, name: string, expr: PermissionExpr, depth: number): ProofNode {
    const { type, id } = entity;
    switch (expr.kind) {
      case "computedUserSet":
        return this.proveMember(type, id, expr.relation, depth);
      case "computedAttribute":
        return this.proveMember(type, id, expr.name, depth);
      case "rewrite": {
        const result = this.#decided(this.decideExpr(type, id, expr, depth));
        const cut = this.#cut(entity, name, result);
        if (cut !== undefined) return cut;
        const node = this.#node(expr.op, entity, name, result);
        const [a, b] = expr.children;
        const ra = this.#decided(this.decideExpr(type, id, a, depth));
        // the branches that decide the node: ALLOWED shows its grant, DENIED every branch tried
        let shown: PermissionExpr[];
        if (expr.op === "union") shown = result === TRUE ? [ra === TRUE ? a : b] : [a, b];
        else if (expr.op === "intersection") shown = result === TRUE ? [a, b] : [ra === FALSE ? a : b];
        else shown = result === FALSE && ra === FALSE ? [a] : [a, b];
        for (const c of shown) node.children.push(this.proveExpr(entity, name, c, depth));
        return node;
      }
      case "tupleToUserSet": {
        const result = this.#decided(this.decideExpr(type, id, expr, depth));
        const label = `${expr.tupleSet}.${expr.computed}`;
        const cut = this.#cut(entity, label, result);
        if (cut !== undefined) return cut;
        const node = this.#node("tuple_to_userset", entity, label, result);
        const tuples = this.#ev.tuples(type, id, expr.tupleSet);
        if (tuples === undefined) throw NOT_LOADED;
        if (tuples.length === 0) node.reason = `no tuple ${type}:${id}#${expr.tupleSet}`;
        for (const t of tuples) {
          const s = t.subject;
          if (result === TRUE && this.#decided(this.invoke(s.type, s.id, expr.computed, depth)) !== TRUE)
            continue;
          node.children.push(this.proveMember(s.type, s.id, expr.computed, depth, t));
          if (result === TRUE) break;
        }
        return node;
      }
      case "call": {
        const result = this.#decided(this.decideExpr(type, id, expr, depth));
        const cut = this.#cut(entity, expr.ruleName, result);
        if (cut !== undefined) return cut;
        const node = this.#node("rule", entity, expr.ruleName, result);
        const rule = this.#schema.definition.rules[expr.ruleName];
        const args: Record<string, ProofValue> = {};
        const ev = this.#ev;
        let contextual = false;
        for (const p of rule.parameters) {
          // bound as the engine binds them (evaluation/rules-call.ts): stored, then contextual, then zero
          const stored = ev.storedAttribute(type, id, p.name);
          if (stored === undefined) throw NOT_LOADED;
          let a: Attribute | undefined = stored ?? undefined;
          if (a === undefined) {
            a = ev.contextAttribute(type, id, p.name);
            if (a !== undefined) contextual = true;
          }
          const value: AttributeValue = a ? a.value : { type: p.type, data: zeroData(p.type) };
          args[p.name] = attributeValueToWire(value);
        }
        node.rule = { name: rule.name, expression: rule.expression.trim(), arguments: args };
        node.contextual = contextual;
        return node;
      }
    }
  }
}

/**
 * A check's decision and its proof. `target.schema` is the compiled schema; the rest of the target is a check's.
 * Throws what check throws (PembaError ERROR_CODE_SCHEMA_NOT_FOUND, ERROR_CODE_DEPTH_NOT_ENOUGH, rule errors).
 */
export async function explain(
  target: ExplainTarget,
  query: CheckQuery,
  options: ExplainOptions = {},
): Promise<ExplainResponse> {
  const schema = target.schema;
  const pool = target.evaluations;
  const ev =
    pool !== undefined
      ? pool.take(schema, target, query.subject)
      : new Evaluation(schema, target, query.subject);
  const explainer = new Explainer(
    schema,
    ev,
    query.subject,
    target,
    options.maxNodes ?? DEFAULT_EXPLAIN_NODES,
  );
  const { type, id } = query.entity;
  const { permission } = query;
  const depth = target.depth;
  let result: WalkResult;
  for (;;) {
    explainer.checkCount = 0;
    result = explainer.invoke(type, id, permission, depth);
    if (result === FAILED) throw explainer.error;
    if (result !== PENDING) break;
    const loading = ev.load();
    if (loading !== undefined) await loading;
  }
  const checkCount = explainer.checkCount || 1;
  explainer.proving = true;
  let proof: ProofNode;
  for (;;) {
    explainer.resetPath();
    try {
      proof = explainer.proveMember(type, id, permission, depth);
      break;
    } catch (e) {
      if (e !== NOT_LOADED) throw e;
      const loading = ev.load();
      if (loading !== undefined) await loading;
    }
  }
  pool?.give(ev);
  return {
    can: result === TRUE ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED",
    metadata: { check_count: checkCount },
    proof,
    truncated: explainer.truncated,
  };
}
