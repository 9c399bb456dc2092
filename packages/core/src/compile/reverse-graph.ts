/**
 * The schema read backwards, for lookup-entity: for each member `T#x`, which members depend on it and how
 * (Permify's "linked schema"). Built once per compiled schema, on first use (CompiledSchema.reverseGraph).
 */
import type { PermissionExpr, SchemaDefinition } from "../schema/ast.ts";

export type ReverseEdge =
  /** `E#m` uses `E#x` on the same entity (computed userset / attribute). */
  | { kind: "same"; to: string }
  /** `E#r@T:id#x` tuples make `T:id#x` grant `E:id#to` (userset subjects, or tuple-to-userset `r.x`). */
  | { kind: "tuples"; to: string; entityType: string; relation: string; subjectRelations: string[] };

export interface ReverseGraph {
  /** producer `T#x` → edges */
  edges: Map<string, ReverseEdge[]>;
  /** `E#m` → members it depends on (left side of exclusions only: the right side can only remove). */
  dependencies: Map<string, string[]>;
  /** Members whose value may hold for an entity with no tuples: attributes, rule calls. */
  universal: Set<string>;
}

/** The reverse graph of a schema (its entities and rules; nothing compiled is needed). */
export function buildReverseGraph(definition: SchemaDefinition): ReverseGraph {
  const edges = new Map<string, ReverseEdge[]>();
  const dependencies = new Map<string, string[]>();
  const universal = new Set<string>();
  const add = (from: string, edge: ReverseEdge) => {
    const list = edges.get(from);
    if (list) list.push(edge);
    else edges.set(from, [edge]);
    const deps = dependencies.get(edge.to);
    if (deps) deps.push(from);
    else dependencies.set(edge.to, [from]);
  };
  for (const [type, def] of Object.entries(definition.entities)) {
    for (const r of Object.values(def.relations)) {
      const to = `${type}#${r.name}`;
      if (!dependencies.has(to)) dependencies.set(to, []);
      for (const ref of r.references) {
        if (ref.relation !== "")
          add(`${ref.type}#${ref.relation}`, {
            kind: "tuples",
            to,
            entityType: type,
            relation: r.name,
            subjectRelations: [ref.relation],
          });
      }
    }
    for (const a of Object.keys(def.attributes)) universal.add(`${type}#${a}`);
    for (const p of Object.values(def.permissions)) {
      const to = `${type}#${p.name}`;
      if (!dependencies.has(to)) dependencies.set(to, []);
      const walk = (e: PermissionExpr): void => {
        switch (e.kind) {
          case "rewrite":
            walk(e.children[0]);
            if (e.op !== "exclusion") walk(e.children[1]);
            return;
          case "computedUserSet":
            add(`${type}#${e.relation}`, { kind: "same", to });
            return;
          case "computedAttribute":
            add(`${type}#${e.name}`, { kind: "same", to });
            return;
          case "call":
            universal.add(to);
            return;
          case "tupleToUserSet": {
            const rel = def.relations[e.tupleSet];
            const byType = new Map<string, string[]>();
            for (const ref of rel?.references ?? []) {
              const list = byType.get(ref.type) ?? [];
              if (!list.includes(ref.relation)) list.push(ref.relation);
              byType.set(ref.type, list);
            }
            for (const [subjectType, subjectRelations] of byType)
              add(`${subjectType}#${e.computed}`, {
                kind: "tuples",
                to,
                entityType: type,
                relation: e.tupleSet,
                subjectRelations,
              });
          }
        }
      };
      walk(p.child);
    }
  }
  for (const name of Object.keys(definition.rules))
    for (const type of Object.keys(definition.entities)) universal.add(`${type}#${name}`);
  return { edges, dependencies, universal };
}

/** Every member the answer for `start` can depend on. */
export function dependencyClosure(graph: ReverseGraph, start: string): Set<string> {
  const seen = new Set<string>([start]);
  const stack = [start];
  while (stack.length > 0) {
    const node = stack.pop() as string;
    for (const dep of graph.dependencies.get(node) ?? []) {
      if (!seen.has(dep)) {
        seen.add(dep);
        stack.push(dep);
      }
    }
  }
  return seen;
}
