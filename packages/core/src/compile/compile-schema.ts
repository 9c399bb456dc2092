/** SchemaDefinition → closures. Every expression node becomes one closure; nothing is interpreted per check. */

import { PembaError } from "../errors.ts";
import { type CompiledRule, compileRule } from "../rules/index.ts";
import type { PermissionExpr, SchemaDefinition } from "../schema/ast.ts";
import type { CompiledEntity, CompiledSchema, MemberKind } from "./compiled-schema.ts";
import { buildReverseGraph, type ReverseGraph } from "./reverse-graph.ts";
import {
  FAILED,
  FALSE,
  type MemberEvaluator,
  type MemberRef,
  PENDING,
  type ReadRef,
  TRUE,
  type WalkResult,
} from "./walk.ts";

/** `E#r`: a subject equal to the question's subject grants; userset subjects `T:id#s` are checked recursively. */
function relationEvaluator(ref: ReadRef): MemberEvaluator {
  return (walk, id, depth) => {
    const tuples = walk.relation(ref, id);
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

/**
 * `r.x`: for every tuple `E#r@T:id[#s]`, `x` on `T:id` (the subject relation is ignored, like Permify). The member
 * `T#x` is resolved once per subject type (a one-entry cache: tuples of one relation mostly share a type).
 */
function tupleToUserSetEvaluator(tupleSet: ReadRef, computed: string): MemberEvaluator {
  let cachedType = "";
  let cachedRef: MemberRef | undefined;
  return (walk, id, depth) => {
    const tuples = walk.relation(tupleSet, id);
    if (tuples === undefined) return PENDING;
    let pending = false;
    let failed = false;
    for (let i = 0; i < tuples.length; i++) {
      const t = tuples[i].subject;
      if (t.type !== cachedType) {
        cachedRef = walk.member(t.type, computed);
        cachedType = t.type;
      }
      const r =
        cachedRef !== undefined
          ? walk.call(cachedRef, t.id, depth)
          : walk.invoke(t.type, t.id, computed, depth);
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

/** A member of `type` by name, resolved at compile time when the schema has it. */
function invokeMember(refs: Map<string, MemberRef>, type: string, name: string): MemberEvaluator {
  const ref = refs.get(name);
  if (ref === undefined) return (walk, id, depth) => walk.invoke(type, id, name, depth);
  return (walk, id, depth) => walk.call(ref, id, depth);
}

function compileExpression(
  type: string,
  expr: PermissionExpr,
  rules: Map<string, CompiledRule>,
  refs: Map<string, MemberRef>,
  readRef: (type: string, name: string) => ReadRef,
): MemberEvaluator {
  switch (expr.kind) {
    case "rewrite": {
      const a = compileExpression(type, expr.children[0], rules, refs, readRef);
      const b = compileExpression(type, expr.children[1], rules, refs, readRef);
      if (expr.op === "union") return union(a, b);
      if (expr.op === "intersection") return intersection(a, b);
      return exclusion(a, b);
    }
    case "computedUserSet":
      return invokeMember(refs, type, expr.relation);
    case "computedAttribute":
      return invokeMember(refs, type, expr.name);
    case "tupleToUserSet":
      return tupleToUserSetEvaluator(readRef(type, expr.tupleSet), expr.computed);
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

const notCompiled: MemberEvaluator = () => FAILED;

/**
 * Compiles a checked schema once. Throws PembaError ERROR_CODE_SCHEMA_COMPILE (gRPC 13) for CEL errors.
 * `compiledRules` holds rules the caller compiled already (a schema write compiles them one event-loop turn each).
 */
export function compileSchema(
  definition: SchemaDefinition,
  compiledRules: ReadonlyMap<string, CompiledRule> = new Map(),
): CompiledSchema {
  const rules = new Map<string, CompiledRule>();
  for (const name of Object.keys(definition.rules))
    rules.set(name, compiledRules.get(name) ?? compileRule(definition.rules[name]));
  const slots: MemberRef[] = [];
  const newRef = (type: string, name: string): MemberRef => {
    const ref: MemberRef = {
      slot: slots.length,
      type,
      name,
      evaluate: notCompiled,
    };
    slots.push(ref);
    return ref;
  };
  // Pass 1: a ref (slot) per member and per rule callable by name, so closures can point at any member.
  const refsByEntity = new Map<string, Map<string, MemberRef>>();
  for (const name of Object.keys(definition.entities)) {
    const def = definition.entities[name];
    const refs = new Map<string, MemberRef>();
    for (const r of Object.keys(def.relations)) refs.set(r, newRef(name, r));
    for (const a of Object.keys(def.attributes)) if (!refs.has(a)) refs.set(a, newRef(name, a));
    for (const p of Object.keys(def.permissions)) if (!refs.has(p)) refs.set(p, newRef(name, p));
    refsByEntity.set(name, refs);
  }
  /** Reads of names that are not members (an unchecked schema) still get a slot of their own. */
  const extraReads = new Map<string, ReadRef>();
  const readRef = (type: string, name: string): ReadRef => {
    const ref = refsByEntity.get(type)?.get(name);
    if (ref !== undefined) return ref;
    const key = `${type}#${name}`;
    let extra = extraReads.get(key);
    if (extra === undefined) {
      extra = newRef(type, name);
      extraReads.set(key, extra);
    }
    return extra;
  };
  // Pass 2: the closures.
  const entities = new Map<string, CompiledEntity>();
  for (const name of Object.keys(definition.entities)) {
    const def = definition.entities[name];
    const refs = refsByEntity.get(name) as Map<string, MemberRef>;
    const members = new Map<string, MemberEvaluator>();
    const kinds = new Map<string, MemberKind>();
    for (const r of Object.keys(def.relations)) {
      members.set(r, relationEvaluator(refs.get(r) as MemberRef));
      kinds.set(r, "relation");
    }
    for (const a of Object.keys(def.attributes)) {
      const ref = refs.get(a) as MemberRef;
      members.set(a, (walk, id) => walk.attribute(ref, id));
      kinds.set(a, "attribute");
    }
    for (const p of Object.keys(def.permissions)) {
      members.set(p, compileExpression(name, def.permissions[p].child, rules, refs, readRef));
      kinds.set(p, "permission");
    }
    for (const [member, evaluate] of members) (refs.get(member) as MemberRef).evaluate = evaluate;
    for (const [ruleName, rule] of rules) {
      if (refs.has(ruleName)) continue;
      const ref = newRef(name, ruleName);
      ref.evaluate = (walk) => walk.callRuleByName(rule);
      refs.set(ruleName, ref);
    }
    entities.set(name, { name, definition: def, members, kinds, refs });
  }
  let reverse: ReverseGraph | undefined;
  const compiled: CompiledSchema = {
    definition,
    entities,
    rules,
    slots,
    reverseGraph: () => {
      reverse ??= buildReverseGraph(definition);
      return reverse;
    },
  };
  return compiled;
}
