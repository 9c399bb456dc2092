/** SchemaDefinition → closures. Every expression node becomes one closure; nothing is interpreted per check. */

import { PembaError } from "../errors.ts";
import { type CompiledRule, compileRule } from "../rules/index.ts";
import type { PermissionExpr, SchemaDefinition } from "../schema/ast.ts";
import type { CompiledEntity, CompiledSchema, MemberKind } from "./compiled-schema.ts";
import { FAILED, FALSE, type MemberEvaluator, PENDING, TRUE, type WalkResult } from "./walk.ts";

/** `E#r`: a subject equal to the question's subject grants; userset subjects `T:id#s` are checked recursively. */
function relationEvaluator(type: string, relation: string): MemberEvaluator {
  return (walk, id, depth) => {
    const tuples = walk.tuples(type, id, relation);
    if (tuples === undefined) return PENDING;
    const s = walk.subject;
    for (let i = 0; i < tuples.length; i++) {
      const t = tuples[i].subject;
      if (t.id === s.id && t.type === s.type && t.relation === s.relation) return TRUE;
    }
    let pending = false;
    let failed = false;
    for (let i = 0; i < tuples.length; i++) {
      const t = tuples[i].subject;
      if (t.relation === "") continue;
      const r = walk.invoke(t.type, t.id, t.relation, depth);
      if (r === TRUE) return TRUE;
      if (r === PENDING) pending = true;
      else if (r === FAILED) failed = true;
    }
    return pending ? PENDING : failed ? FAILED : FALSE;
  };
}

/** `r.x`: for every tuple `E#r@T:id[#s]`, `x` on `T:id` (the subject relation is ignored, like Permify). */
function tupleToUserSetEvaluator(type: string, tupleSet: string, computed: string): MemberEvaluator {
  return (walk, id, depth) => {
    const tuples = walk.tuples(type, id, tupleSet);
    if (tuples === undefined) return PENDING;
    let pending = false;
    let failed = false;
    for (let i = 0; i < tuples.length; i++) {
      const t = tuples[i].subject;
      const r = walk.invoke(t.type, t.id, computed, depth);
      if (r === TRUE) return TRUE;
      if (r === PENDING) pending = true;
      else if (r === FAILED) failed = true;
    }
    return pending ? PENDING : failed ? FAILED : FALSE;
  };
}

function union(a: MemberEvaluator, b: MemberEvaluator): MemberEvaluator {
  return (walk, id, depth) => {
    const ra = a(walk, id, depth);
    if (ra === TRUE) return TRUE;
    const rb = b(walk, id, depth);
    if (rb === TRUE) return TRUE;
    if (ra === PENDING || rb === PENDING) return PENDING;
    return ra === FAILED || rb === FAILED ? FAILED : FALSE;
  };
}

function intersection(a: MemberEvaluator, b: MemberEvaluator): MemberEvaluator {
  return (walk, id, depth) => {
    const ra = a(walk, id, depth);
    if (ra === FALSE) return FALSE;
    const rb = b(walk, id, depth);
    if (rb === FALSE) return FALSE;
    if (ra === PENDING || rb === PENDING) return PENDING;
    return ra === FAILED || rb === FAILED ? FAILED : TRUE;
  };
}

/** `a not b`: a must grant and b must not; b is looked at while a is still pending so both load in one pass. */
function exclusion(a: MemberEvaluator, b: MemberEvaluator): MemberEvaluator {
  return (walk, id, depth) => {
    const ra = a(walk, id, depth);
    if (ra === FALSE || ra === FAILED) return ra;
    const rb = b(walk, id, depth);
    if (rb === TRUE) return FALSE;
    if (ra === PENDING || rb === PENDING) return PENDING;
    return rb === FAILED ? FAILED : TRUE;
  };
}

function compileExpression(
  type: string,
  expr: PermissionExpr,
  rules: Map<string, CompiledRule>,
): MemberEvaluator {
  switch (expr.kind) {
    case "rewrite": {
      const a = compileExpression(type, expr.children[0], rules);
      const b = compileExpression(type, expr.children[1], rules);
      if (expr.op === "union") return union(a, b);
      if (expr.op === "intersection") return intersection(a, b);
      return exclusion(a, b);
    }
    case "computedUserSet": {
      const name = expr.relation;
      return (walk, id, depth) => walk.invoke(type, id, name, depth);
    }
    case "computedAttribute": {
      const name = expr.name;
      return (walk, id, depth) => walk.invoke(type, id, name, depth);
    }
    case "tupleToUserSet":
      return tupleToUserSetEvaluator(type, expr.tupleSet, expr.computed);
    case "call": {
      const rule = rules.get(expr.ruleName);
      if (!rule)
        throw new PembaError(
          "ERROR_CODE_SCHEMA_COMPILE",
          `${expr.pos.line}:${expr.pos.column}: rule definition not found`,
          { grpcCode: 13 },
        );
      return (walk, id): WalkResult => walk.callRule(rule, type, id);
    }
  }
}

/** Compiles a checked schema once. Throws PembaError ERROR_CODE_SCHEMA_COMPILE (gRPC 13) for CEL errors. */
export function compileSchema(definition: SchemaDefinition): CompiledSchema {
  const rules = new Map<string, CompiledRule>();
  for (const name of Object.keys(definition.rules)) rules.set(name, compileRule(definition.rules[name]));
  const entities = new Map<string, CompiledEntity>();
  for (const name of Object.keys(definition.entities)) {
    const def = definition.entities[name];
    const members = new Map<string, MemberEvaluator>();
    const kinds = new Map<string, MemberKind>();
    for (const r of Object.keys(def.relations)) {
      members.set(r, relationEvaluator(name, r));
      kinds.set(r, "relation");
    }
    for (const a of Object.keys(def.attributes)) {
      members.set(a, (walk, id) => walk.booleanAttribute(name, id, a));
      kinds.set(a, "attribute");
    }
    for (const p of Object.keys(def.permissions)) {
      members.set(p, compileExpression(name, def.permissions[p].child, rules));
      kinds.set(p, "permission");
    }
    entities.set(name, { name, definition: def, members, kinds });
  }
  return { definition, entities, rules };
}
