import type { CompiledRule } from "../rules/index.ts";
import type { EntityDefinition, SchemaDefinition } from "../schema/ast.ts";
import type { MemberEvaluator } from "./walk.ts";

export type MemberKind = "relation" | "permission" | "attribute";

export interface CompiledEntity {
  readonly name: string;
  readonly definition: EntityDefinition;
  /** Every relation, permission and attribute by name. */
  readonly members: Map<string, MemberEvaluator>;
  readonly kinds: Map<string, MemberKind>;
}

/** A schema compiled once: closures per (entity, member) and compiled CEL rules. */
export interface CompiledSchema {
  readonly definition: SchemaDefinition;
  readonly entities: Map<string, CompiledEntity>;
  readonly rules: Map<string, CompiledRule>;
}
