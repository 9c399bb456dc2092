/**
 * The structural difference of two schema definitions: what a schema change removes (entities, relations,
 * permissions, attributes, subject types of a relation), what it adds, which attributes change type, and which
 * permissions may decide differently (their definition or anything they reach changed). Pure: the data it would
 * orphan or flip is measured by the service (service/schema-diff.ts).
 */
import type { AttributeType } from "../model.ts";
import { own, type PermissionExpr, type SchemaDefinition } from "./ast.ts";
import { printExpression } from "./print.ts";

export type RemovedKind = "ENTITY" | "RELATION" | "PERMISSION" | "ATTRIBUTE" | "RELATION_SUBJECT";

/** Something of the old schema the new one lacks. */
export interface SchemaRemoval {
  kind: RemovedKind;
  entity: string;
  /** The member's name; "" for an entity. */
  name: string;
  /** RELATION_SUBJECT: the subject type no longer allowed, `type` or `type#relation`. */
  subject?: string;
}

export interface SchemaAddition {
  kind: "ENTITY" | "RELATION" | "PERMISSION" | "ATTRIBUTE";
  entity: string;
  name: string;
}

export interface AttributeTypeChange {
  entity: string;
  attribute: string;
  from: AttributeType;
  to: AttributeType;
}

/** A permission both schemas define whose decisions may differ on the same data. */
export interface AffectedPermission {
  entity: string;
  permission: string;
  /** The direct subject types (`@type`, no relation) either schema's permission can reach: the subjects to ask. */
  subjectTypes: string[];
}

export interface StructuralDiff {
  removed: SchemaRemoval[];
  added: SchemaAddition[];
  attributeTypeChanges: AttributeTypeChange[];
  affectedPermissions: AffectedPermission[];
  /** Permissions in both schemas whose definition and every dependency are the same: no decision can flip. */
  unchangedPermissions: number;
}

const MEMBER_KIND = {
  REFERENCE_RELATION: "RELATION",
  REFERENCE_PERMISSION: "PERMISSION",
  REFERENCE_ATTRIBUTE: "ATTRIBUTE",
} as const;

/** Entities and members `a` has and `b` lacks (or holds as another kind of member), in `a`'s order. */
function missing(a: SchemaDefinition, b: SchemaDefinition): SchemaAddition[] {
  const out: SchemaAddition[] = [];
  for (const [entityName, entity] of Object.entries(a.entities)) {
    const other = own(b.entities, entityName);
    if (other === undefined) {
      out.push({ kind: "ENTITY", entity: entityName, name: "" });
      continue;
    }
    for (const [name, kind] of Object.entries(entity.references)) {
      if (own(other.references, name) !== kind)
        out.push({ kind: MEMBER_KIND[kind], entity: entityName, name });
    }
  }
  return out;
}

/** What `from` has and `to` lacks, and the subject types kept relations no longer allow. */
function removals(from: SchemaDefinition, to: SchemaDefinition): SchemaRemoval[] {
  const out: SchemaRemoval[] = missing(from, to);
  for (const [entityName, entity] of Object.entries(from.entities)) {
    const other = own(to.entities, entityName);
    for (const [name, relation] of Object.entries(entity.relations)) {
      const kept = own(other?.relations, name);
      if (kept === undefined) continue;
      const allowed = new Set(kept.references.map((r) => (r.relation ? `${r.type}#${r.relation}` : r.type)));
      for (const r of relation.references) {
        const subject = r.relation ? `${r.type}#${r.relation}` : r.type;
        // a subject type whose entity is gone is reported (and counted) with the entity
        if (!allowed.has(subject) && own(to.entities, r.type) !== undefined)
          out.push({ kind: "RELATION_SUBJECT", entity: entityName, name, subject });
      }
    }
  }
  return out;
}

/**
 * A node of the dependency graph: `entity#member`, `rule:name`, or `via:entity#relation` (a relation only walked
 * through, `relation.x`: its tuples' subjects are not subjects the permission grants to).
 */
type Node = string;

/** What a node is, as text: equal text in both schemas means the node decides the same on the same data. */
function localDefinition(schema: SchemaDefinition, node: Node): string {
  if (node.startsWith("via:")) return localDefinition(schema, node.slice(4));
  if (node.startsWith("rule:")) {
    const rule = own(schema.rules, node.slice(5));
    if (rule === undefined) return "missing";
    return `rule(${rule.parameters.map((p) => `${p.name} ${p.type}`).join(",")}) ${rule.expression}`;
  }
  const [entityName, name] = node.split("#") as [string, string];
  const entity = own(schema.entities, entityName);
  if (entity === undefined) return "missing entity";
  const relation = own(entity.relations, name);
  if (relation !== undefined)
    return `relation ${relation.references.map((r) => (r.relation ? `${r.type}#${r.relation}` : r.type)).join(" ")}`;
  const attribute = own(entity.attributes, name);
  if (attribute !== undefined) return `attribute ${attribute.type}`;
  const permission = own(entity.permissions, name);
  if (permission !== undefined) return `permission ${printExpression(permission.child)}`;
  // a name that is not a member: a rule called by name (Permify runs it), else nothing
  return own(schema.rules, name) !== undefined ? `call rule:${name}` : "missing";
}

/** The nodes `node` reads directly in `schema`. */
function dependencies(schema: SchemaDefinition, node: Node, leafTypes: Set<string>): Node[] {
  if (node.startsWith("rule:") || node.startsWith("via:")) return [];
  const [entityName, name] = node.split("#") as [string, string];
  const entity = own(schema.entities, entityName);
  if (entity === undefined) return [];
  const relation = own(entity.relations, name);
  if (relation !== undefined) {
    const out: Node[] = [];
    for (const r of relation.references) {
      if (r.relation) out.push(`${r.type}#${r.relation}`);
      else leafTypes.add(r.type);
    }
    return out;
  }
  const permission = own(entity.permissions, name);
  if (permission !== undefined) {
    const out: Node[] = [];
    const visit = (e: PermissionExpr): void => {
      switch (e.kind) {
        case "rewrite":
          visit(e.children[0]);
          visit(e.children[1]);
          return;
        case "computedUserSet":
          out.push(`${entityName}#${e.relation}`);
          return;
        case "computedAttribute":
          out.push(`${entityName}#${e.name}`);
          return;
        case "tupleToUserSet": {
          out.push(`via:${entityName}#${e.tupleSet}`);
          for (const r of own(entity.relations, e.tupleSet)?.references ?? [])
            out.push(`${r.type}#${e.computed}`);
          return;
        }
        case "call":
          out.push(`rule:${e.ruleName}`);
          for (const a of e.arguments) out.push(`${entityName}#${a}`);
          return;
      }
    };
    visit(permission.child);
    return out;
  }
  if (own(entity.attributes, name) === undefined && own(schema.rules, name) !== undefined)
    return [`rule:${name}`];
  return [];
}

/** Every node `start` reaches in `schema` (itself included), and the direct subject types on the way. */
function closure(schema: SchemaDefinition, start: Node, leafTypes: Set<string>): Set<Node> {
  const seen = new Set<Node>([start]);
  const stack = [start];
  while (stack.length > 0) {
    for (const next of dependencies(schema, stack.pop()!, leafTypes)) {
      if (seen.has(next)) continue;
      seen.add(next);
      stack.push(next);
    }
  }
  return seen;
}

function affected(from: SchemaDefinition, to: SchemaDefinition): [AffectedPermission[], number] {
  const out: AffectedPermission[] = [];
  let unchanged = 0;
  for (const [entityName, entity] of Object.entries(to.entities)) {
    const old = own(from.entities, entityName);
    if (old === undefined) continue;
    for (const name of Object.keys(entity.permissions)) {
      if (own(old.permissions, name) === undefined) continue;
      const node = `${entityName}#${name}`;
      const types = new Set<string>();
      const nodes = new Set([...closure(from, node, types), ...closure(to, node, types)]);
      let same = true;
      for (const n of nodes) {
        if (localDefinition(from, n) !== localDefinition(to, n)) {
          same = false;
          break;
        }
      }
      if (same) unchanged++;
      else out.push({ entity: entityName, permission: name, subjectTypes: [...types].sort() });
    }
  }
  return [out, unchanged];
}

/** The structural difference from `from` (the schema in use) to `to` (the one about to be written). */
export function diffSchemas(from: SchemaDefinition, to: SchemaDefinition): StructuralDiff {
  const attributeTypeChanges: AttributeTypeChange[] = [];
  for (const [entityName, entity] of Object.entries(from.entities)) {
    for (const [name, attribute] of Object.entries(entity.attributes)) {
      const next = own(own(to.entities, entityName)?.attributes, name);
      if (next !== undefined && next.type !== attribute.type)
        attributeTypeChanges.push({
          entity: entityName,
          attribute: name,
          from: attribute.type,
          to: next.type,
        });
    }
  }
  const [affectedPermissions, unchangedPermissions] = affected(from, to);
  return {
    removed: removals(from, to),
    added: missing(to, from),
    attributeTypeChanges,
    affectedPermissions,
    unchangedPermissions,
  };
}
