/**
 * lookup-subject: a forward walk from the entity collects candidate subject ids (direct subjects of the wanted
 * type/relation reached through relations, usersets and tuple-to-usersets; for attribute and rule leaves every id
 * of the subject type the store knows), then each candidate is confirmed with a check. No "ALL" marker, so no
 * order-dependent results.
 */
import type { CompiledSchema } from "../compile/index.ts";
import { PembaError } from "../errors.ts";
import type { Tuple } from "../model.ts";
import type { PermissionExpr } from "../schema/ast.ts";
import { Evaluation, settle } from "./evaluation/evaluation.ts";
import { confirmPage, contextIds } from "./lookup-paging.ts";
import type { EvaluationTarget, LookupSubjectQuery } from "./types.ts";

interface Node {
  type: string;
  id: string;
  name: string;
}

export async function lookupSubject(
  compiled: CompiledSchema,
  target: EvaluationTarget,
  query: LookupSubjectQuery,
): Promise<{ subjectIds: string[]; continuousToken: string }> {
  const entity = compiled.entities.get(query.entity.type);
  if (!entity) throw new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND");
  if (!entity.members.has(query.permission) && !compiled.rules.has(query.permission))
    throw new PembaError("ERROR_CODE_SCHEMA_NOT_FOUND");
  const ref = query.subjectReference;
  const evaluation = new Evaluation(compiled, target, { type: ref.type, id: "", relation: ref.relation });
  const candidates = new Set<string>();
  let universe = false;
  const visited = new Set<string>();
  let frontier: Node[] = [];
  const visit = (type: string, id: string, name: string) => {
    const key = `${type}:${id}#${name}`;
    if (visited.has(key)) return;
    visited.add(key);
    frontier.push({ type, id, name });
  };
  /** Tuple reads a node needs: relation reads (`then` gets the tuples). */
  type Read = { node: Node; relation: string; onTuples: (tuples: readonly Tuple[]) => void };
  let reads: Read[] = [];
  const expandExpr = (node: Node, expr: PermissionExpr): void => {
    switch (expr.kind) {
      case "rewrite":
        expandExpr(node, expr.children[0]);
        // `a not b`: b can only remove subjects.
        if (expr.op !== "exclusion") expandExpr(node, expr.children[1]);
        return;
      case "computedUserSet":
        visit(node.type, node.id, expr.relation);
        return;
      case "computedAttribute":
        visit(node.type, node.id, expr.name);
        return;
      case "call":
        universe = true;
        return;
      case "tupleToUserSet": {
        const computed = expr.computed;
        reads.push({
          node,
          relation: expr.tupleSet,
          onTuples: (tuples) => {
            for (const t of tuples) visit(t.subject.type, t.subject.id, computed);
          },
        });
      }
    }
  };
  const expandNode = (node: Node): void => {
    if (node.type === ref.type && node.name === ref.relation) candidates.add(node.id);
    const def = compiled.entities.get(node.type);
    const kind = def?.kinds.get(node.name);
    if (kind === undefined) {
      if (compiled.rules.has(node.name)) universe = true;
      return;
    }
    if (kind === "attribute") {
      universe = true;
      return;
    }
    if (kind === "permission") {
      expandExpr(node, def?.definition.permissions[node.name].child as PermissionExpr);
      return;
    }
    reads.push({
      node,
      relation: node.name,
      onTuples: (tuples) => {
        for (const t of tuples) {
          const s = t.subject;
          if (s.type === ref.type && s.relation === ref.relation) candidates.add(s.id);
          if (s.relation !== "") visit(s.type, s.id, s.relation);
        }
      },
    });
  };
  visit(query.entity.type, query.entity.id, query.permission);
  while (frontier.length > 0 || reads.length > 0) {
    const nodes = frontier;
    frontier = [];
    for (const n of nodes) expandNode(n);
    const wanted = reads;
    reads = [];
    let waiting = wanted;
    await settle(
      evaluation,
      () => {
        waiting = waiting.filter((r) => evaluation.tuples(r.node.type, r.node.id, r.relation) === undefined);
        return waiting.length === 0 ? true : undefined;
      },
      undefined,
    );
    for (const r of wanted) r.onTuples(evaluation.tuples(r.node.type, r.node.id, r.relation) ?? []);
  }
  if (universe) {
    for (const id of await target.store.listObjectIds(target.tenantId, target.snap, ref.type, target.at))
      candidates.add(id);
    for (const id of contextIds(target.context, ref.type)) candidates.add(id);
  }
  const page = await confirmPage(
    evaluation,
    candidates,
    (id) => ({
      entity: query.entity,
      permission: query.permission,
      subject: { type: ref.type, id, relation: ref.relation },
    }),
    target.depth,
    query.pageSize,
    query.continuousToken,
  );
  return { subjectIds: page.ids, continuousToken: page.continuousToken };
}
