/**
 * explain (a Pemba extension beside Permify's API): a check's decision and its proof.
 *
 * The walk is the engine's (evaluation.ts and the compiled closures), run over the schema's expressions so that it
 * can be traced: the same order of branches, the same short cuts (a union stops at its first grant, an
 * intersection at its first denial), the subject itself as a userset, the depth, the memo of decided
 * sub-problems, the cycle cut and the nesting bound; reads go through an Evaluation, so they batch and cache as a
 * check's do, pass after pass until decided. Every decided sub-problem also gets its proof node, built on the way:
 * a node ALLOWED shows the branch that granted it, a node DENIED every branch tried and why each failed; a
 * sub-problem already on the walk path is a `cycle` node (a cycle cannot grant). A memoized sub-problem's node is
 * shared where it recurs. The proof holds model values (attribute values as AttributeValue); http/convert.ts's
 * explainToWire gives it in Permify's JSON, bounded in nodes and bytes.
 *
 * Runtime-neutral (no Node built-in): the console runs it in the browser on a MemoryStore.
 */
import type { CompiledEntity, CompiledSchema, MemberRef, WalkResult } from "../compile/index.ts";
import { FAILED, FALSE, PENDING, TRUE } from "../compile/index.ts";
import { PembaError } from "../errors.ts";
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
import { Evaluation, settle } from "./evaluation/evaluation.ts";
import { Memo } from "./evaluation/memo.ts";
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
export interface ProofNode<V = AttributeValue> {
  kind: ProofKind;
  entity: Entity;
  name: string;
  result: "ALLOWED" | "DENIED";
  tuple?: ProofTuple;
  attribute?: { entity: Entity; attribute: string; value: V };
  rule?: { name: string; expression: string; arguments: Record<string, V> };
  reason?: string;
  contextual?: boolean;
  /** A cut node: how many of its parent's children it stands for (itself and the later ones). */
  omitted?: number;
  children: ProofNode<V>[];
}

/** The explain answer: the check's decision and the whole proof (explainToWire bounds it for the wire). */
export interface Explanation {
  can: CheckResult;
  metadata: { check_count: number };
  proof: ProofNode;
}

/** A check's target plus the compiled schema it runs on. */
export interface ExplainTarget extends EvaluationTarget {
  schema: CompiledSchema;
}

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
  /** Entries (the evaluation's numbers) added to the memo so far. */
  #known = 0;
  readonly #memo = new Memo();
  readonly #path = new WalkPath();
  /** The proof node of each memoized entry (without the hop that led to it). */
  readonly #nodes: ProofNode[] = [];
  checkCount = 0;
  /** The proof node of the latest call that answered TRUE or FALSE (unspecified after PENDING or FAILED). */
  node!: ProofNode;

  constructor(schema: CompiledSchema, ev: Evaluation, subject: Subject, target: EvaluationTarget) {
    this.#schema = schema;
    this.#ev = ev;
    this.#subject = subject;
    this.#contextTuples = new Set((target.context?.tuples ?? []).map(tupleKey));
  }

  get error(): unknown {
    return this.#ev.error;
  }

  /** The evaluation's entry of (ref, id), known to the memo. */
  #entry(ref: MemberRef, id: string): number {
    const e = this.#ev.entryOf(ref, id);
    while (this.#known <= e) this.#memo.add(this.#known++);
    return e;
  }

  #make(kind: ProofKind, type: string, id: string, name: string, result: WalkResult, children: ProofNode[]) {
    const node: ProofNode = {
      kind,
      entity: { type, id },
      name,
      result: result === TRUE ? "ALLOWED" : "DENIED",
      children,
    };
    this.node = node;
    return node;
  }

  /** The current node, marked with the tuple `hop` that led to it (a copy when the node is memoized). */
  #withHop(hop: Tuple, shared: boolean): void {
    const node = shared ? { ...this.node } : this.node;
    node.tuple = proofTuple(hop);
    node.contextual = this.#contextTuples.size > 0 && this.#contextTuples.has(tupleKey(hop));
    this.node = node;
  }

  /** As Evaluation.invoke (depth, the subject itself, memo, cycle cut, nesting bound, the member), with its node. */
  invoke(type: string, id: string, name: string, depth: number, hop?: Tuple): WalkResult {
    this.checkCount++;
    const ev = this.#ev;
    if (depth < 0) return ev.fail(new PembaError("ERROR_CODE_DEPTH_NOT_ENOUGH"));
    if (this.#isSubject(type, id, name)) {
      this.#make("direct", type, id, name, TRUE, []).reason = `the subject is ${type}:${id}#${name} itself`;
      if (hop !== undefined) this.#withHop(hop, false);
      return TRUE;
    }
    const ref = ev.member(type, name);
    if (ref === undefined) return ev.fail(new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND"));
    const e = this.#entry(ref, id);
    const decided = this.#memo.recall(e, depth);
    if (decided !== -1) {
      this.node = this.#nodes[e];
      if (hop !== undefined) this.#withHop(hop, true);
      return decided as WalkResult;
    }
    const path = this.#path;
    if (path.cuts(e)) {
      this.#make("cycle", type, id, name, FALSE, []).reason =
        `cycle: ${type}:${id}#${name} is already on the path`;
      if (hop !== undefined) this.#withHop(hop, false);
      return FALSE;
    }
    const at = path.length;
    if (at >= MAX_NESTING) return ev.fail(new PembaError("ERROR_CODE_DEPTH_NOT_ENOUGH"));
    const outer = path.enter(e);
    const result = this.#member(ref, id, depth - 1);
    const memoizable = path.leave(at, outer) && (result === TRUE || result === FALSE);
    if (memoizable) {
      this.#memo.remember(e, depth, result);
      this.#nodes[e] = this.node;
    }
    if (hop !== undefined && (result === TRUE || result === FALSE)) this.#withHop(hop, memoizable);
    return result;
  }

  #isSubject(type: string, id: string, name: string): boolean {
    const s = this.#subject;
    return s.relation === name && s.id === id && s.type === type;
  }

  #member(ref: MemberRef, id: string, depth: number): WalkResult {
    const { type, name } = ref;
    const entity = this.#schema.entities.get(type);
    const ev = this.#ev;
    switch (entity?.kinds.get(name)) {
      case "relation":
        return this.#relation(ref, id, depth);
      case "attribute": {
        const r = ev.attribute(ref, id);
        if (r === TRUE || r === FALSE) {
          const node = this.#make("attribute", type, id, name, r, []);
          const contextual = ev.contextAttribute(type, id, name);
          const a = contextual ?? ev.storedAttribute(type, id, name);
          if (a) {
            node.attribute = { entity: { type, id }, attribute: name, value: a.value };
            node.contextual = contextual !== undefined;
          } else node.reason = `no attribute ${type}:${id}$${name} (false)`;
        }
        return r;
      }
      case "permission": {
        const child = (entity as CompiledEntity).definition.permissions[name].child;
        const r = this.#expr(type, id, name, child, depth);
        if (r === TRUE || r === FALSE) this.#make("permission", type, id, name, r, [this.node]);
        return r;
      }
      default: {
        const rule = this.#schema.rules.get(name);
        if (rule === undefined) return FAILED;
        const r = ev.callRuleByName(rule);
        if (r === TRUE || r === FALSE)
          this.#make("rule", type, id, name, r, []).rule = {
            name,
            expression: this.#schema.definition.rules[name].expression.trim(),
            arguments: {},
          };
        return r;
      }
    }
  }

  /** As the compiled relation closure: a tuple naming the subject grants, then each userset subject in turn. */
  #relation(ref: MemberRef, id: string, depth: number): WalkResult {
    const { type, name } = ref;
    const tuples = this.#ev.relation(ref, id);
    if (tuples === undefined) return PENDING;
    const s = this.#subject;
    for (const t of tuples) {
      const u = t.subject;
      if (u.id === s.id && u.type === s.type && u.relation === s.relation) {
        const leaf = this.#make("direct", type, id, name, TRUE, []);
        leaf.reason = `the tuple names the subject ${subjectString(s)}`;
        this.#withHop(t, false);
        this.#make("relation", type, id, name, TRUE, [leaf]);
        return TRUE;
      }
    }
    const tried: ProofNode[] = [];
    const r = this.#hops(tuples, undefined, depth, tried);
    if (r === TRUE) this.#make("relation", type, id, name, TRUE, [this.node]);
    if (r !== FALSE) return r;
    this.#make("relation", type, id, name, FALSE, tried).reason =
      `no tuple ${type}:${id}#${name}@${subjectString(s)}`;
    return FALSE;
  }

  /**
   * Each tuple's hop in turn, to its subject's `computed` member (the subject's userset relation when undefined;
   * direct subjects are skipped), as the compiled closures walk them: TRUE at the first grant (its node is
   * `this.node`), else FALSE with the denied nodes in `tried`, or PENDING / FAILED.
   */
  #hops(
    tuples: readonly Tuple[],
    computed: string | undefined,
    depth: number,
    tried: ProofNode[],
  ): WalkResult {
    let pending = false;
    let failed = false;
    for (const t of tuples) {
      const u = t.subject;
      const name = computed ?? u.relation;
      if (name === "") continue;
      const r = this.invoke(u.type, u.id, name, depth, t);
      if (r === TRUE) return TRUE;
      if (r === FALSE) tried.push(this.node);
      else if (r === PENDING) pending = true;
      else failed = true;
    }
    return pending ? PENDING : failed ? FAILED : FALSE;
  }

  /** The tuples of a tupleset relation (its member ref when the schema has it). */
  #tupleSet(type: string, id: string, relation: string): readonly Tuple[] | undefined {
    const ref = this.#ev.member(type, relation);
    return ref !== undefined ? this.#ev.relation(ref, id) : this.#ev.tuples(type, id, relation);
  }

  /**
   * As the compiled expression closures, building the node of `expr` (of the permission `name`): an operation
   * ALLOWED shows its granting branches, DENIED the branches that denied it.
   */
  #expr(type: string, id: string, name: string, expr: PermissionExpr, depth: number): WalkResult {
    switch (expr.kind) {
      case "rewrite": {
        const ra = this.#expr(type, id, name, expr.children[0], depth);
        const na = this.node;
        const op = expr.op;
        if (op === "union") {
          if (ra === TRUE) return this.#op(op, type, id, name, TRUE, [na]);
          const rb = this.#expr(type, id, name, expr.children[1], depth);
          if (rb === TRUE) return this.#op(op, type, id, name, TRUE, [this.node]);
          if (ra === PENDING || rb === PENDING) return PENDING;
          if (ra === FAILED || rb === FAILED) return FAILED;
          return this.#op(op, type, id, name, FALSE, [na, this.node]);
        }
        if (op === "intersection") {
          if (ra === FALSE) return this.#op(op, type, id, name, FALSE, [na]);
          const rb = this.#expr(type, id, name, expr.children[1], depth);
          if (rb === FALSE) return this.#op(op, type, id, name, FALSE, [this.node]);
          if (ra === PENDING || rb === PENDING) return PENDING;
          if (ra === FAILED || rb === FAILED) return FAILED;
          return this.#op(op, type, id, name, TRUE, [na, this.node]);
        }
        if (ra === FALSE) return this.#op(op, type, id, name, FALSE, [na]);
        if (ra === FAILED) return FAILED;
        const rb = this.#expr(type, id, name, expr.children[1], depth);
        // excluded: with the base's grant when it is decided (a base still loading is not shown)
        if (rb === TRUE)
          return this.#op(op, type, id, name, FALSE, ra === TRUE ? [na, this.node] : [this.node]);
        if (ra === PENDING || rb === PENDING) return PENDING;
        if (rb === FAILED) return FAILED;
        return this.#op(op, type, id, name, TRUE, [na, this.node]);
      }
      case "computedUserSet":
        return this.invoke(type, id, expr.relation, depth);
      case "computedAttribute":
        return this.invoke(type, id, expr.name, depth);
      case "tupleToUserSet": {
        const tuples = this.#tupleSet(type, id, expr.tupleSet);
        if (tuples === undefined) return PENDING;
        const label = `${expr.tupleSet}.${expr.computed}`;
        const tried: ProofNode[] = [];
        const r = this.#hops(tuples, expr.computed, depth, tried);
        if (r === TRUE) this.#make("tuple_to_userset", type, id, label, TRUE, [this.node]);
        if (r !== FALSE) return r;
        const node = this.#make("tuple_to_userset", type, id, label, FALSE, tried);
        if (tuples.length === 0) node.reason = `no tuple ${type}:${id}#${expr.tupleSet}`;
        return FALSE;
      }
      case "call": {
        const rule = this.#schema.rules.get(expr.ruleName);
        if (rule === undefined) return FAILED;
        const r = this.#ev.callRule(rule, type, id);
        if (r === TRUE || r === FALSE) this.#ruleNode(type, id, expr.ruleName, r);
        return r;
      }
    }
  }

  #op(
    op: "union" | "intersection" | "exclusion",
    type: string,
    id: string,
    name: string,
    r: WalkResult,
    children: ProofNode[],
  ): WalkResult {
    this.#make(op, type, id, name, r, children);
    return r;
  }

  /** A rule call's node: its expression and its arguments, bound as the engine binds them (rules-call.ts). */
  #ruleNode(type: string, id: string, ruleName: string, r: WalkResult): void {
    const node = this.#make("rule", type, id, ruleName, r, []);
    const rule = this.#schema.definition.rules[ruleName];
    const args: Record<string, AttributeValue> = {};
    const ev = this.#ev;
    let contextual = false;
    for (const p of rule.parameters) {
      // stored, then contextual, then the zero value (a decided call has its stored attributes loaded)
      let a: Attribute | undefined = ev.storedAttribute(type, id, p.name) ?? undefined;
      if (a === undefined) {
        a = ev.contextAttribute(type, id, p.name);
        if (a !== undefined) contextual = true;
      }
      const value: AttributeValue = a ? a.value : { type: p.type, data: zeroData(p.type) };
      args[p.name] = value;
    }
    node.rule = { name: rule.name, expression: rule.expression.trim(), arguments: args };
    node.contextual = contextual;
  }
}

/**
 * A check's decision and its proof. `target.schema` is the compiled schema; the rest of the target is a check's.
 * Throws what check throws (PembaError ERROR_CODE_SCHEMA_NOT_FOUND, ERROR_CODE_DEPTH_NOT_ENOUGH, rule errors).
 */
export async function explain(target: ExplainTarget, query: CheckQuery): Promise<Explanation> {
  const schema = target.schema;
  const pool = target.evaluations;
  const ev =
    pool !== undefined
      ? pool.take(schema, target, query.subject)
      : new Evaluation(schema, target, query.subject);
  const explainer = new Explainer(schema, ev, query.subject, target);
  const { type, id } = query.entity;
  const { permission } = query;
  const result = await settle(
    ev,
    () => {
      explainer.checkCount = 0;
      return explainer.invoke(type, id, permission, target.depth);
    },
    PENDING,
  );
  if (result === FAILED) throw explainer.error;
  const checkCount = explainer.checkCount || 1;
  pool?.give(ev);
  return {
    can: result === TRUE ? "CHECK_RESULT_ALLOWED" : "CHECK_RESULT_DENIED",
    metadata: { check_count: checkCount },
    proof: explainer.node,
  };
}
