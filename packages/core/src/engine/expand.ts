/**
 * expand: the permission's rewrite tree over the data, in Permify's shape (API §4.3). Relation leaves list their
 * subjects (userset subjects are expanded beside them under a UNION), attribute leaves carry the value, rule
 * calls the argument values, tuple-to-userset nodes are UNIONs named after the tupleset relation. A userset already
 * on the current path is not expanded again (cycles end).
 *
 * The tree is not shared between branches (it is sent as JSON, where shared sub-trees would be repeated anyway), so
 * a schema whose permissions reuse each other (`p2 = p1 and p1`, `p3 = p2 and p2`, ...) grows exponentially: a tree
 * of more than MAX_EXPAND_NODES nodes is refused with RESOURCE_EXHAUSTED before it is built.
 */
import type { CompiledSchema } from "../compile/index.ts";
import { PembaError } from "../errors.ts";
import type { AttributeValue, Entity } from "../model.ts";
import { zeroArgument } from "../rules/index.ts";
import type { PermissionExpr } from "../schema/ast.ts";
import { Evaluation, settle } from "./evaluation/evaluation.ts";
import type { EvaluationTarget, ExpandNode } from "./types.ts";

/** The most nodes one expand builds. */
export const MAX_EXPAND_NODES = 100_000;

/** gRPC RESOURCE_EXHAUSTED (HTTP 429), as for an oversize request. */
export const expandTooLarge = (): PembaError =>
  new PembaError("ERROR_CODE_EXECUTION", `expand tree exceeds ${MAX_EXPAND_NODES} nodes`, { grpcCode: 8 });

const OPERATIONS = {
  union: "OPERATION_UNION",
  intersection: "OPERATION_INTERSECTION",
  exclusion: "OPERATION_EXCLUSION",
} as const;

export async function expand(
  compiled: CompiledSchema,
  target: EvaluationTarget,
  query: { entity: Entity; permission: string },
): Promise<ExpandNode> {
  const evaluation = new Evaluation(compiled, target, { type: "", id: "", relation: "" });
  const readTuples = (e: Entity, relation: string) =>
    settle(evaluation, () => evaluation.tuples(e.type, e.id, relation), undefined);
  const readAttribute = (e: Entity, name: string) =>
    settle(evaluation, () => evaluation.storedAttribute(e.type, e.id, name), undefined);
  const path = new Set<string>();
  let nodes = 0;
  /** Counts a node about to be built (before its children: an oversize tree stops early). */
  const count = (): void => {
    if (++nodes > MAX_EXPAND_NODES) throw expandTooLarge();
  };

  const member = async (e: Entity, name: string): Promise<ExpandNode> => {
    count();
    const def = compiled.entities.get(e.type);
    const kind = def?.kinds.get(name);
    const entity = { type: e.type, id: e.id };
    if (!def || kind === undefined) {
      const rule = compiled.rules.get(name);
      if (!rule) throw new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND");
      return call(
        e,
        name,
        rule.parameters.map((p) => p.name),
      );
    }
    if (kind === "attribute") {
      const a = evaluation.contextAttribute(e.type, e.id, name) ?? (await readAttribute(e, name));
      const type = def.definition.attributes[name].type;
      const value: AttributeValue = a ? a.value : { type, data: zeroArgument(type) as boolean };
      return { entity, permission: name, arguments: [], leaf: { value } };
    }
    const key = `${e.type}:${e.id}#${name}`;
    if (kind === "permission") {
      // A permission that reaches itself: the cycle adds nothing.
      if (path.has(key))
        return { entity, permission: name, arguments: [], leaf: { subjects: { subjects: [] } } };
      path.add(key);
      try {
        return await expression(e, name, def.definition.permissions[name].child);
      } finally {
        path.delete(key);
      }
    }
    path.add(key);
    try {
      const tuples = await readTuples(e, name);
      const subjects = tuples.map((t) => ({ ...t.subject }));
      const leaf: ExpandNode = { entity, permission: name, arguments: [], leaf: { subjects: { subjects } } };
      const usersets = subjects.filter(
        (s) => s.relation !== "" && !path.has(`${s.type}:${s.id}#${s.relation}`),
      );
      if (usersets.length === 0) return leaf;
      const children: ExpandNode[] = [leaf];
      for (const s of usersets) children.push(await member({ type: s.type, id: s.id }, s.relation));
      return { entity, permission: name, arguments: [], expand: { operation: "OPERATION_UNION", children } };
    } finally {
      path.delete(key);
    }
  };

  const call = async (e: Entity, name: string, args: string[]): Promise<ExpandNode> => {
    count();
    const rule = compiled.rules.get(name);
    const values: Record<string, unknown> = {};
    for (const p of rule?.parameters ?? []) {
      const a = (await readAttribute(e, p.name)) ?? evaluation.contextAttribute(e.type, e.id, p.name);
      values[p.name] = a ? a.value : { type: p.type, data: zeroArgument(p.type) };
    }
    return {
      entity: { type: e.type, id: e.id },
      permission: name,
      arguments: args.map((a) => ({ computed_attribute: { name: a } })),
      leaf: { values: { values } },
    };
  };

  const expression = async (e: Entity, permission: string, expr: PermissionExpr): Promise<ExpandNode> => {
    const entity = { type: e.type, id: e.id };
    switch (expr.kind) {
      case "rewrite": {
        count();
        const children = [
          await expression(e, permission, expr.children[0]),
          await expression(e, permission, expr.children[1]),
        ];
        return { entity, permission, arguments: [], expand: { operation: OPERATIONS[expr.op], children } };
      }
      case "computedUserSet":
        return member(e, expr.relation);
      case "computedAttribute":
        return member(e, expr.name);
      case "call":
        return call(e, expr.ruleName, expr.arguments);
      case "tupleToUserSet": {
        count();
        const children: ExpandNode[] = [];
        for (const t of await readTuples(e, expr.tupleSet)) {
          const key = `${t.subject.type}:${t.subject.id}#${expr.computed}`;
          if (path.has(key)) continue;
          path.add(key);
          try {
            children.push(await member({ type: t.subject.type, id: t.subject.id }, expr.computed));
          } finally {
            path.delete(key);
          }
        }
        return {
          entity,
          permission: expr.tupleSet,
          arguments: [],
          expand: { operation: "OPERATION_UNION", children },
        };
      }
    }
  };

  if (!compiled.entities.has(query.entity.type)) throw new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND");
  return member(query.entity, query.permission);
}
