import type { CompiledRule } from "../rules/index.ts";
import type { EntityDefinition, SchemaDefinition } from "../schema/ast.ts";
import type { ReverseGraph } from "./reverse-graph.ts";
import type { MemberEvaluator, MemberRef, ReadRef } from "./walk.ts";

export type MemberKind = "relation" | "permission" | "attribute";

export interface CompiledEntity {
  readonly name: string;
  readonly definition: EntityDefinition;
  /** Every relation, permission and attribute by name. */
  readonly members: Map<string, MemberEvaluator>;
  readonly kinds: Map<string, MemberKind>;
  /** Every member, and every rule not shadowed by a member (a rule called by name), with its slot. */
  readonly refs: Map<string, MemberRef>;
}

/** A schema compiled once: closures per (entity, member) and compiled CEL rules. */
export interface CompiledSchema {
  readonly definition: SchemaDefinition;
  readonly entities: Map<string, CompiledEntity>;
  readonly rules: Map<string, CompiledRule>;
  /** Every ref (members, rules callable by name, reads of names that are not members) by slot. */
  readonly slots: readonly ReadRef[];
  /** The schema read backwards (lookup-entity): derived from the schema alone, built on first use. */
  readonly reverseGraph: () => ReverseGraph;
}
