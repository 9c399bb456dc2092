/**
 * Re-verification of an explain proof (test support, exported from `@pemba/core/testing`): every hop is replayed
 * against the store and the schema, independently of the explain walk.
 *
 * - the proof follows the schema: a permission node's child is its expression, an operation node's children are
 *   the operation's branches, a tuple-to-userset node's children are reached through tuples of its tupleset;
 * - every tuple is read back from the store (or found among the contextual tuples when `contextual`) and links its
 *   node to its parent;
 * - every attribute is read back (stored or contextual) and decides its node; every rule is evaluated again on its
 *   arguments, and its arguments are the entity's attributes (or the zero value);
 * - each node's result follows from its children's (a union ALLOWED has a granting child, a relation DENIED lists
 *   one child per userset tuple the store holds, ...); a `cycle` node names a sub-problem of its path; a `cut`
 *   node appears only when `truncated`;
 * - the result of every permission, relation and attribute node outside a cycle equals a fresh check.
 */
import type { CompiledSchema } from "../../compile/index.ts";
import { check } from "../../engine/check.ts";
import type { ExplainTarget } from "../../engine/explain.ts";
import type { CheckQuery } from "../../engine/types.ts";
import type { Attribute, Entity, Tuple } from "../../model.ts";
import { tupleKey } from "../../model.ts";
import { ruleArgument } from "../../rules/index.ts";
import type { PermissionExpr } from "../../schema/ast.ts";
import { attributeValueFromWire, attributeValueToWire } from "../../wire/convert.ts";
import type { ExplainResponse, WireProofNode as ProofNode, ProofValue } from "../convert.ts";

const key = (e: Entity, name: string) => `${e.type}:${e.id}#${name}`;
const allowed = (n: ProofNode) => n.result === "ALLOWED";
const hasCycle = (n: ProofNode): boolean => n.kind === "cycle" || n.children.some(hasCycle);

/** The problems found in `response` (empty when every hop re-verifies). */
export async function verifyProof(
  target: ExplainTarget,
  query: CheckQuery,
  response: ExplainResponse,
): Promise<string[]> {
  const problems: string[] = [];
  const schema: CompiledSchema = target.schema;
  const context = target.context;
  const contextTuples = new Set((context?.tuples ?? []).map(tupleKey));
  const subject = query.subject;
  const fail = (n: ProofNode, message: string) =>
    problems.push(`${n.kind} ${key(n.entity, n.name)}: ${message}`);

  const storedTuples = async (e: Entity, relation: string): Promise<readonly Tuple[]> =>
    target.store.queryTuples(
      target.tenantId,
      target.snap,
      [{ entityType: e.type, entityIds: [e.id], relations: [relation] }],
      target.at,
    );
  const readTuples = async (e: Entity, relation: string): Promise<Tuple[]> => {
    const stored = [...(await storedTuples(e, relation))];
    const seen = new Set(stored.map(tupleKey));
    for (const t of context?.tuples ?? [])
      if (
        t.entity.type === e.type &&
        t.entity.id === e.id &&
        t.relation === relation &&
        !seen.has(tupleKey(t))
      )
        stored.push(t);
    return stored;
  };
  const storedAttribute = async (e: Entity, name: string): Promise<Attribute | undefined> => {
    const rows = await target.store.queryAttributes(
      target.tenantId,
      target.snap,
      [{ entityType: e.type, entityIds: [e.id], attributes: [name] }],
      target.at,
    );
    return rows[0];
  };
  const contextAttribute = (e: Entity, name: string): Attribute | undefined =>
    context?.attributes.find((a) => a.entity.type === e.type && a.entity.id === e.id && a.attribute === name);

  /** The tuple behind a hop exists where the node says it does. */
  const replayTuple = async (n: ProofNode): Promise<void> => {
    const t = n.tuple;
    if (t === undefined) return;
    const k = tupleKey(t);
    if (n.contextual) {
      if (!contextTuples.has(k)) fail(n, `contextual tuple ${k} is not in the context`);
    } else if (!(await storedTuples(t.entity, t.relation)).some((s) => tupleKey(s) === k))
      fail(n, `tuple ${k} is not stored`);
  };

  const freshCheck = async (n: ProofNode): Promise<void> => {
    if (hasCycle(n) || n.kind === "rule") return;
    const out = await check(
      schema,
      { ...target, evaluations: undefined },
      {
        entity: n.entity,
        permission: n.name,
        subject,
      },
    );
    if ((out.can === "CHECK_RESULT_ALLOWED") !== allowed(n)) fail(n, `a fresh check answers ${out.can}`);
  };

  /** Children a node has: those shown, and those a cut node stands for. */
  const shownOrOmitted = (n: ProofNode) =>
    n.children.reduce((count, c) => count + (c.kind === "cut" ? (c.omitted ?? 1) : 1), 0);

  const valueEquals = (a: ProofValue, b: ProofValue) => JSON.stringify(a) === JSON.stringify(b);

  /** A member node (`type:id#name`), reached from its parent through `via` (a tuple or nothing). */
  const member = async (n: ProofNode, path: string[]): Promise<void> => {
    await replayTuple(n);
    if (n.kind === "cut") {
      if (!response.truncated) fail(n, "cut in a proof that is not truncated");
      await freshCheck(n);
      return;
    }
    if (n.kind === "direct") {
      if (!allowed(n)) fail(n, "a direct node is ALLOWED");
      const self =
        n.entity.type === subject.type && n.entity.id === subject.id && n.name === subject.relation;
      if (!self) fail(n, "names a member that is not the subject");
      return;
    }
    const k = key(n.entity, n.name);
    if (n.kind === "cycle") {
      if (allowed(n)) fail(n, "a cycle cannot grant");
      if (!path.includes(k)) fail(n, "not on the path");
      return;
    }
    const entity = schema.entities.get(n.entity.type);
    const kind = entity?.kinds.get(n.name);
    const inner = [...path, k];
    if (kind === "permission" && n.kind === "permission") {
      if (n.children.length !== 1) fail(n, "a permission node has one child");
      else {
        const child = n.children[0];
        if (child.result !== n.result) fail(n, "its result is not its expression's");
        await expression(
          child,
          n.entity,
          n.name,
          entity?.definition.permissions[n.name].child as PermissionExpr,
          inner,
        );
      }
    } else if (kind === "relation" && n.kind === "relation") {
      await relation(n, inner);
    } else if (kind === "attribute" && n.kind === "attribute") {
      await attribute(n);
    } else if (kind === undefined && n.kind === "rule" && schema.rules.has(n.name)) {
      const rule = schema.rules.get(n.name);
      if (rule && rule.evaluateUnbound(context?.data ?? {}) !== allowed(n))
        fail(n, "the rule answers otherwise");
      return;
    } else {
      fail(n, `the schema's member is a ${kind ?? "rule or nothing"}`);
      return;
    }
    await freshCheck(n);
  };

  const relation = async (n: ProofNode, path: string[]): Promise<void> => {
    const tuples = await readTuples(n.entity, n.name);
    const direct = tuples.find(
      (t) =>
        t.subject.type === subject.type &&
        t.subject.id === subject.id &&
        t.subject.relation === subject.relation,
    );
    if (direct !== undefined) {
      const leaf = n.children[0];
      if (!allowed(n) || n.children.length !== 1 || leaf.kind !== "direct" || leaf.tuple === undefined)
        fail(n, `the tuple ${tupleKey(direct)} grants: one direct child expected`);
      else {
        await replayTuple(leaf);
        if (tupleKey(leaf.tuple) !== tupleKey(direct))
          fail(n, "the direct child's tuple is not the granting tuple");
      }
      return;
    }
    await hops(
      n,
      tuples.filter((t) => t.subject.relation !== ""),
      undefined,
      path,
    );
  };

  /**
   * The children of a node reached through tuples (a relation's usersets, a tuple-to-userset's tupleset): each
   * through one of `tuples` to its subject's `computed` member (the subject's relation when undefined); ALLOWED
   * has one granting child, DENIED one denied child per tuple.
   */
  const hops = async (n: ProofNode, tuples: Tuple[], computed: string | undefined, path: string[]) => {
    for (const c of n.children) {
      const t = c.tuple;
      if (c.kind === "cut") continue;
      if (t === undefined || !tuples.some((u) => tupleKey(u) === tupleKey(t))) {
        fail(c, "not reached through a tuple of its parent");
        continue;
      }
      if (
        c.entity.type !== t.subject.type ||
        c.entity.id !== t.subject.id ||
        c.name !== (computed ?? t.subject.relation)
      )
        fail(c, "is not the tuple's subject");
    }
    if (allowed(n)) {
      if (n.children.length !== 1 || !allowed(n.children[0]))
        fail(n, "an ALLOWED hop has one granting child");
    } else {
      if (shownOrOmitted(n) !== tuples.length)
        fail(n, `lists ${shownOrOmitted(n)} of ${tuples.length} tuples`);
      if (n.children.some(allowed)) fail(n, "a DENIED hop has a granting child");
    }
    for (const c of n.children) await member(c, path);
  };

  const attribute = async (n: ProofNode): Promise<void> => {
    const a = contextAttribute(n.entity, n.name) ?? (await storedAttribute(n.entity, n.name));
    if (a === undefined) {
      if (n.attribute !== undefined) fail(n, "shows an attribute that is not there");
      if (allowed(n)) fail(n, "a missing attribute cannot grant");
      return;
    }
    if (n.attribute === undefined) return void fail(n, "the attribute is not shown");
    if (Boolean(n.contextual) !== (contextAttribute(n.entity, n.name) !== undefined))
      fail(n, "contextual is wrong");
    const value = attributeValueFromWire(n.attribute.value);
    if (JSON.stringify(value) !== JSON.stringify(a.value)) fail(n, "the value differs from the stored one");
    if ((a.value.data === true) !== allowed(n)) fail(n, "the value does not decide the node");
  };

  const rule = async (n: ProofNode, e: Entity, ruleName: string): Promise<void> => {
    const compiled = schema.rules.get(ruleName);
    const def = schema.definition.rules[ruleName];
    if (n.kind !== "rule" || compiled === undefined || n.rule === undefined)
      return void fail(n, `expected the rule call ${ruleName}`);
    if (n.rule.expression !== def.expression.trim()) fail(n, "the expression is not the schema's");
    const args = [];
    for (const p of def.parameters) {
      const shown = n.rule.arguments[p.name];
      if (shown === undefined) {
        fail(n, `argument ${p.name} missing`);
        continue;
      }
      const a = (await storedAttribute(e, p.name)) ?? contextAttribute(e, p.name);
      if (a !== undefined && !valueEquals(shown, attributeValueToWire(a.value)))
        fail(n, `argument ${p.name} differs`);
      const value = attributeValueFromWire(shown);
      args.push(ruleArgument(p.type, value.data));
    }
    if (compiled.evaluate(args, context?.data ?? {}) !== allowed(n)) fail(n, "the rule answers otherwise");
  };

  const expression = async (
    n: ProofNode,
    e: Entity,
    permission: string,
    expr: PermissionExpr,
    path: string[],
  ): Promise<void> => {
    if (n.kind === "cut") return void (response.truncated || fail(n, "cut in a proof that is not truncated"));
    switch (expr.kind) {
      case "computedUserSet":
      case "computedAttribute": {
        const name = expr.kind === "computedUserSet" ? expr.relation : expr.name;
        if (n.entity.type !== e.type || n.entity.id !== e.id || n.name !== name)
          fail(n, `expected ${key(e, name)}`);
        return member(n, path);
      }
      case "call":
        return rule(n, e, expr.ruleName);
      case "rewrite": {
        if (n.kind !== expr.op) return void fail(n, `expected ${expr.op}`);
        const [a, b] = expr.children;
        const r = n.children.map(allowed);
        let ok: boolean;
        if (expr.op === "union") ok = allowed(n) ? r.length === 1 && r[0] : r.length === 2 && !r[0] && !r[1];
        else if (expr.op === "intersection")
          ok = allowed(n) ? r.length === 2 && r[0] && r[1] : r.length === 1 && !r[0];
        else
          ok = allowed(n)
            ? r.length === 2 && r[0] && !r[1]
            : // the base denied; or the excluded branch granted (with the base's grant, unless still loading)
              r.length === 1 || (r.length === 2 && r[0] && r[1]);
        // a cut node standing for several children shows the result of the first only
        if (!ok && shownOrOmitted(n) === n.children.length)
          fail(n, `children ${r.join(",")} do not give ${n.result}`);
        for (let i = 0; i < n.children.length; i++) {
          // a one-child union or intersection names its branch by the child itself: try both; a one-child
          // exclusion shows its base when DENIED, the excluded branch when ALLOWED
          const one = expr.op === "exclusion" ? [r[0] ? b : a] : [a, b];
          const candidates = n.children.length === 2 ? [[a], [b]][i] : one;
          const before = problems.length;
          let matched = false;
          for (const c of candidates) {
            const mark = problems.length;
            await expression(n.children[i], e, permission, c, path);
            if (problems.length === mark) {
              matched = true;
              break;
            }
            problems.length = mark;
          }
          if (!matched) {
            problems.length = before;
            await expression(n.children[i], e, permission, candidates[0], path);
          }
        }
        return;
      }
      case "tupleToUserSet": {
        const label = `${expr.tupleSet}.${expr.computed}`;
        if (n.kind !== "tuple_to_userset" || n.name !== label) return void fail(n, `expected ${label}`);
        await hops(n, await readTuples(e, expr.tupleSet), expr.computed, path);
        return;
      }
    }
  };

  const root = response.proof;
  if (
    root.entity.type !== query.entity.type ||
    root.entity.id !== query.entity.id ||
    root.name !== query.permission
  )
    problems.push("the proof's root is not the question");
  if ((response.can === "CHECK_RESULT_ALLOWED") !== allowed(root))
    problems.push("can differs from the proof's root");
  await member(root, []);
  return problems;
}
