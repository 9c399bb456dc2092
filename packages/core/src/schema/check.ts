/**
 * Permify's compile step (pkg/dsl/ast/validation.go + pkg/dsl/compiler): reference checks with positional errors,
 * then the SchemaDefinition. Checks run in Permify's order: no entities, relation types, then every statement in
 * source order (an entity's attributes before its permissions; a rule's parameter types). CEL type-checking of rule
 * bodies is not done here (the engine's compileSchema does it).
 */
import type { AttributeType } from "../model.ts";
import type {
  AttributeDefinition,
  EntityDefinition,
  PermissionDefinition,
  PermissionExpr,
  RelationDefinition,
  RuleDefinition,
  SchemaDefinition,
  SourcePosition,
} from "./ast.ts";
import { nameRecord } from "./ast.ts";
import type { NamePart, RawEntity, RawExpr, RawRelation, RawRule, RawSchema } from "./raw-ast.ts";
import { SchemaError, schemaCompileError } from "./schema-error.ts";

const SCALAR_TYPES: Record<string, AttributeType> = {
  boolean: "ATTRIBUTE_TYPE_BOOLEAN",
  string: "ATTRIBUTE_TYPE_STRING",
  integer: "ATTRIBUTE_TYPE_INTEGER",
  double: "ATTRIBUTE_TYPE_DOUBLE",
};

/** `boolean`/`string[]`/... -> ATTRIBUTE_TYPE_*; anything else is Permify's `invalid argument`. */
export function attributeTypeOf(typeName: string, isArray: boolean, pos: SourcePosition): AttributeType {
  const scalar = Object.hasOwn(SCALAR_TYPES, typeName) ? SCALAR_TYPES[typeName] : undefined;
  if (scalar === undefined) throw schemaCompileError(pos, "ERROR_CODE_INVALID_ARGUMENT");
  return isArray ? (`${scalar}_ARRAY` as AttributeType) : scalar;
}

type MemberKind = "relation" | "attribute" | "permission";

/** Name tables of a schema, as Permify's References. */
export interface SchemaReferences {
  entities: Set<string>;
  /** `entity#member` -> kind */
  members: Map<string, MemberKind>;
  /** `entity#relation` -> its relation types */
  relationTypes: Map<string, RawRelation["types"]>;
  /** `entity#attribute` -> type text as written (`integer`, `string[]`) */
  attributeTypes: Map<string, string>;
  /** rule -> parameter name -> type text */
  rules: Map<string, Map<string, string>>;
}

export function collectReferences(raw: RawSchema): SchemaReferences {
  const refs: SchemaReferences = {
    entities: new Set(),
    members: new Map(),
    relationTypes: new Map(),
    attributeTypes: new Map(),
    rules: new Map(),
  };
  for (const st of raw.statements) {
    if (st.kind === "rule") {
      refs.rules.set(st.name, new Map(st.params.map((p) => [p.name, p.typeName + (p.isArray ? "[]" : "")])));
      continue;
    }
    refs.entities.add(st.name);
    for (const m of st.members) {
      const key = `${st.name}#${m.name}`;
      refs.members.set(key, m.kind);
      if (m.kind === "relation") refs.relationTypes.set(key, m.types);
      if (m.kind === "attribute") refs.attributeTypes.set(key, m.typeName + (m.isArray ? "[]" : ""));
    }
  }
  return refs;
}

/**
 * Longest name of an entity, relation, attribute, permission, rule or rule parameter: the API's name pattern
 * `^[a-zA-Z_]{1,64}$` (the lexer already allows only letters and `_`), so every declared name can be used in a
 * request.
 */
export const MAX_NAME_LENGTH = 64;

/** The first declared name longer than MAX_NAME_LENGTH, as a compile error at its position. */
function checkNameLengths(raw: RawSchema): void {
  const check = (name: string, pos: SourcePosition) => {
    if (name.length > MAX_NAME_LENGTH)
      throw new SchemaError(
        "ERROR_CODE_SCHEMA_COMPILE",
        `${pos.line}:${pos.column}: name longer than ${MAX_NAME_LENGTH} characters (${name.length})`,
        pos,
      );
  };
  for (const st of raw.statements) {
    check(st.name, st.pos);
    if (st.kind === "rule") for (const p of st.params) check(p.name, p.typePos);
    else for (const m of st.members) check(m.name, m.pos);
  }
}

/** Checks a parsed schema and builds its definition. Throws SchemaError (ERROR_CODE_SCHEMA_COMPILE). */
export function checkSchema(raw: RawSchema): SchemaDefinition {
  checkNameLengths(raw);
  const refs = collectReferences(raw);
  if (refs.entities.size === 0) {
    throw schemaCompileError({ line: 1, column: 1 }, "ERROR_CODE_NO_ENTITY_REFERENCES_FOUND_IN_SCHEMA");
  }
  for (const st of raw.statements) {
    if (st.kind !== "entity") continue;
    for (const m of st.members) {
      if (m.kind !== "relation") continue;
      for (const t of m.types) {
        const ok =
          refs.entities.has(t.type) &&
          (t.relation === "" || refs.relationTypes.has(`${t.type}#${t.relation}`));
        if (!ok)
          throw schemaCompileError(t.pos, "ERROR_CODE_RELATION_REFERENCE_NOT_FOUND_IN_ENTITY_REFERENCES");
      }
    }
  }
  const def: SchemaDefinition = { entities: nameRecord(), rules: nameRecord(), order: [] };
  for (const st of raw.statements) {
    if (st.kind === "entity") def.entities[st.name] = compileEntity(st, refs);
    else def.rules[st.name] = compileRule(st);
    def.order.push({ kind: st.kind, name: st.name });
  }
  return def;
}

function compileEntity(st: RawEntity, refs: SchemaReferences): EntityDefinition {
  const entity: EntityDefinition = {
    name: st.name,
    relations: nameRecord(),
    attributes: nameRecord(),
    permissions: nameRecord(),
    references: nameRecord(),
    pos: st.pos,
  };
  for (const m of st.members) {
    if (m.kind !== "relation") continue;
    const rel: RelationDefinition = {
      name: m.name,
      references: m.types.map((t) => ({ type: t.type, relation: t.relation })),
      pos: m.pos,
    };
    entity.relations[m.name] = rel;
    entity.references[m.name] = "REFERENCE_RELATION";
  }
  for (const m of st.members) {
    if (m.kind !== "attribute") continue;
    const attr: AttributeDefinition = {
      name: m.name,
      type: attributeTypeOf(m.typeName, m.isArray, m.typePos),
      pos: m.pos,
    };
    entity.attributes[m.name] = attr;
    entity.references[m.name] = "REFERENCE_ATTRIBUTE";
  }
  for (const m of st.members) {
    if (m.kind !== "permission") continue;
    const perm: PermissionDefinition = {
      name: m.name,
      child: compileExpr(st.name, m.expr, refs),
      pos: m.pos,
    };
    entity.permissions[m.name] = perm;
    entity.references[m.name] = "REFERENCE_PERMISSION";
  }
  return entity;
}

const OPERATIONS = { or: "union", and: "intersection", not: "exclusion" } as const;

function compileExpr(entity: string, expr: RawExpr, refs: SchemaReferences): PermissionExpr {
  switch (expr.kind) {
    case "infix":
      return {
        kind: "rewrite",
        op: OPERATIONS[expr.op],
        children: [compileExpr(entity, expr.left, refs), compileExpr(entity, expr.right, refs)],
      };
    case "call":
      return compileCall(entity, expr, refs);
    case "identifier":
      return compileIdentifier(entity, expr.parts, refs);
  }
}

function compileIdentifier(entity: string, parts: NamePart[], refs: SchemaReferences): PermissionExpr {
  const [first, second] = parts;
  if (parts.length === 1) {
    const kind = refs.members.get(`${entity}#${first.name}`);
    if (kind === undefined) throw schemaCompileError(first.pos, "ERROR_CODE_UNDEFINED_RELATION_REFERENCE");
    if (kind === "attribute") {
      if (refs.attributeTypes.get(`${entity}#${first.name}`) !== "boolean") {
        throw schemaCompileError(first.pos, "ERROR_CODE_SCHEMA_COMPILE");
      }
      return { kind: "computedAttribute", name: first.name, pos: first.pos };
    }
    return { kind: "computedUserSet", relation: first.name, pos: first.pos };
  }
  if (parts.length === 2) {
    checkTupleToUserSet(entity, first, second, refs);
    return { kind: "tupleToUserSet", tupleSet: first.name, computed: second.name, pos: first.pos };
  }
  throw schemaCompileError(parts[2].pos, "ERROR_CODE_NOT_SUPPORTED_RELATION_WALK");
}

/**
 * `r.x`: `r` must be a relation of `entity`, and `x` a relation or permission of every type reachable through
 * `r`'s types, descending into `@T#s` types (Permify's validateTupleToUserSetReference; visited set added so a
 * self-referencing `@group#member` cannot loop forever).
 */
function checkTupleToUserSet(
  entity: string,
  first: NamePart,
  second: NamePart,
  refs: SchemaReferences,
): void {
  const initial = refs.relationTypes.get(`${entity}#${first.name}`);
  if (initial === undefined) throw schemaCompileError(first.pos, "ERROR_CODE_UNDEFINED_RELATION_REFERENCE");
  const stack = [...initial];
  const visited = new Set<string>();
  while (stack.length > 0) {
    const t = stack.pop() as RawRelation["types"][number];
    if (t.relation === "") {
      const kind = refs.members.get(`${t.type}#${second.name}`);
      if (kind === undefined || kind === "attribute") {
        throw schemaCompileError(second.pos, "ERROR_CODE_UNDEFINED_RELATION_REFERENCE");
      }
      continue;
    }
    const key = `${t.type}#${t.relation}`;
    if (visited.has(key)) continue;
    visited.add(key);
    const nested = refs.relationTypes.get(key);
    if (nested === undefined) throw schemaCompileError(first.pos, "ERROR_CODE_UNDEFINED_RELATION_REFERENCE");
    stack.push(...nested);
  }
}

function compileCall(
  entity: string,
  call: RawExpr & { kind: "call" },
  refs: SchemaReferences,
): PermissionExpr {
  const params = refs.rules.get(call.name);
  if (params === undefined) throw schemaCompileError(call.pos, "ERROR_CODE_INVALID_RULE_REFERENCE");
  if (params.size !== call.args.length || call.args.length === 0) {
    throw schemaCompileError(call.pos, "ERROR_CODE_MISSING_ARGUMENT");
  }
  const args: string[] = [];
  for (const arg of call.args) {
    if (arg.length !== 1) throw schemaCompileError(arg[1].pos, "ERROR_CODE_NOT_SUPPORTED_WALK");
    const [a] = arg;
    const attrType = refs.attributeTypes.get(`${entity}#${a.name}`);
    if (attrType === undefined) throw schemaCompileError(call.pos, "ERROR_CODE_INVALID_RULE_REFERENCE");
    const paramType = params.get(a.name);
    if (paramType === undefined || paramType !== attrType)
      throw schemaCompileError(a.pos, "ERROR_CODE_INVALID_ARGUMENT");
    args.push(a.name);
  }
  return { kind: "call", ruleName: call.name, arguments: args, pos: call.pos };
}

function compileRule(st: RawRule): RuleDefinition {
  const parameters: RuleDefinition["parameters"] = [];
  const index = new Map<string, number>();
  for (const p of st.params) {
    const type = attributeTypeOf(p.typeName, p.isArray, p.typePos);
    // Permify keeps one type per parameter name (its map); the last declaration wins here.
    const at = index.get(p.name);
    if (at === undefined) {
      index.set(p.name, parameters.length);
      parameters.push({ name: p.name, type });
    } else parameters[at] = { name: p.name, type };
  }
  return { name: st.name, parameters, expression: st.body, pos: st.pos };
}
