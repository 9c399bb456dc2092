/**
 * SchemaDefinition -> the JSON of Permify's `schemas/read` (protojson with proto field names, every field
 * present, map keys sorted). A rule's `expression` is a cel-go CheckedExpr in Permify; Pemba does not build
 * cel-go's checked AST and answers `{"expr": "<the CEL text>"}` instead (documented difference).
 */
import { type EntityDefinition, nameRecord, type PermissionExpr, type SchemaDefinition } from "./ast.ts";

export type WireChild =
  | { rewrite: { rewrite_operation: string; children: WireChild[] } }
  | { leaf: Record<string, unknown> };

const OPERATION = {
  union: "OPERATION_UNION",
  intersection: "OPERATION_INTERSECTION",
  exclusion: "OPERATION_EXCLUSION",
} as const;

export function childToWire(e: PermissionExpr): WireChild {
  switch (e.kind) {
    case "rewrite":
      return { rewrite: { rewrite_operation: OPERATION[e.op], children: e.children.map(childToWire) } };
    case "computedUserSet":
      return { leaf: { computed_user_set: { relation: e.relation } } };
    case "tupleToUserSet":
      return {
        leaf: {
          tuple_to_user_set: { tupleSet: { relation: e.tupleSet }, computed: { relation: e.computed } },
        },
      };
    case "computedAttribute":
      return { leaf: { computed_attribute: { name: e.name } } };
    case "call":
      return {
        leaf: {
          call: {
            rule_name: e.ruleName,
            arguments: e.arguments.map((name) => ({ computed_attribute: { name } })),
          },
        },
      };
  }
}

function sortedRecord<T, U>(record: Record<string, T>, map: (v: T) => U): Record<string, U> {
  const out = nameRecord<U>();
  for (const key of Object.keys(record).sort()) out[key] = map(record[key]);
  return out;
}

export function entityToWire(e: EntityDefinition): Record<string, unknown> {
  return {
    name: e.name,
    relations: sortedRecord(e.relations, (r) => ({
      name: r.name,
      relation_references: r.references.map((ref) => ({ type: ref.type, relation: ref.relation })),
    })),
    permissions: sortedRecord(e.permissions, (p) => ({ name: p.name, child: childToWire(p.child) })),
    attributes: sortedRecord(e.attributes, (a) => ({ name: a.name, type: a.type })),
    references: sortedRecord(e.references, (k) => k),
  };
}

export interface WireSchemaDefinition {
  entity_definitions: Record<string, Record<string, unknown>>;
  rule_definitions: Record<
    string,
    { name: string; arguments: Record<string, string>; expression: { expr: string } }
  >;
  references: Record<string, "REFERENCE_ENTITY" | "REFERENCE_RULE">;
}

export function schemaToWire(def: SchemaDefinition): WireSchemaDefinition {
  const references: WireSchemaDefinition["references"] = nameRecord();
  for (const name of Object.keys(def.entities)) references[name] = "REFERENCE_ENTITY";
  for (const name of Object.keys(def.rules)) references[name] = "REFERENCE_RULE";
  return {
    entity_definitions: sortedRecord(def.entities, entityToWire),
    rule_definitions: sortedRecord(def.rules, (r) => ({
      name: r.name,
      arguments: sortedRecord(Object.fromEntries(r.parameters.map((p) => [p.name, p.type])), (t) => t),
      expression: { expr: r.expression },
    })),
    references: sortedRecord(references, (k) => k),
  };
}
