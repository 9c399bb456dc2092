/**
 * The compiled schema definition: what the parser + checker produce from DSL text and what the engine compiles
 * into closures. It mirrors Permify's SchemaDefinition (`schemas/read` renders it on the wire) and keeps source
 * positions for error messages.
 */
import type { AttributeType } from "../model.ts";

export interface SourcePosition {
  line: number; // 1-based
  column: number; // 1-based
}

/** Permission expression tree; binary nodes only (chains are left-nested, like Permify). */
export type PermissionExpr =
  | {
      kind: "rewrite";
      op: "union" | "intersection" | "exclusion";
      children: [PermissionExpr, PermissionExpr];
    }
  /** `x`: a relation or permission of the same entity. */
  | { kind: "computedUserSet"; relation: string; pos: SourcePosition }
  /** `x`: a boolean attribute of the same entity. */
  | { kind: "computedAttribute"; name: string; pos: SourcePosition }
  /** `r.x`: for every tuple `E#r@T:id`, evaluate `x` on `T:id`. */
  | { kind: "tupleToUserSet"; tupleSet: string; computed: string; pos: SourcePosition }
  /** `rule(a, b)`: call a rule with the entity's attributes of those names. */
  | { kind: "call"; ruleName: string; arguments: string[]; pos: SourcePosition };

export interface RelationReference {
  type: string;
  relation: string; // "" for a plain `@type`
}

export interface RelationDefinition {
  name: string;
  references: RelationReference[];
  pos: SourcePosition;
}

export interface AttributeDefinition {
  name: string;
  type: AttributeType;
  pos: SourcePosition;
}

export interface PermissionDefinition {
  name: string;
  child: PermissionExpr;
  pos: SourcePosition;
}

export type ReferenceKind = "REFERENCE_RELATION" | "REFERENCE_PERMISSION" | "REFERENCE_ATTRIBUTE";

export interface EntityDefinition {
  name: string;
  relations: Record<string, RelationDefinition>;
  attributes: Record<string, AttributeDefinition>;
  permissions: Record<string, PermissionDefinition>;
  /** Every member name -> what it is. Relation/attribute/permission names share one namespace per entity. */
  references: Record<string, ReferenceKind>;
  pos: SourcePosition;
}

export interface RuleDefinition {
  name: string;
  /** Parameters in declaration order. */
  parameters: { name: string; type: AttributeType }[];
  /** The CEL body as Permify rebuilds it (token literals joined), ready for the CEL compiler. */
  expression: string;
  pos: SourcePosition;
}

export interface SchemaDefinition {
  entities: Record<string, EntityDefinition>;
  rules: Record<string, RuleDefinition>;
  /** Top-level names in source order: entities and rules. */
  order: { kind: "entity" | "rule"; name: string }[];
}

/**
 * A record keyed by schema names: no prototype, so a name such as `__proto__` or `constructor` is an own key like
 * any other (on a plain object `__proto__` would set the prototype and `constructor` would read Object's).
 */
export function nameRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** The value of `name` in a record keyed by schema names, never an inherited property. */
export function own<T>(record: Readonly<Record<string, T>> | undefined, name: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, name) ? record[name] : undefined;
}
