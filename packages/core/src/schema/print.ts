/**
 * SchemaDefinition -> DSL text that parses back to the same definition (positions aside). Used to store the
 * result of partial writes. All operators share one precedence and associate left, so only a right operand
 * that is itself an operation needs parentheses.
 */
import type { AttributeType } from "../model.ts";
import {
  type EntityDefinition,
  own,
  type PermissionExpr,
  type RuleDefinition,
  type SchemaDefinition,
} from "./ast.ts";

const OPERATOR = { union: "or", intersection: "and", exclusion: "not" } as const;

export function attributeTypeText(type: AttributeType): string {
  const name = type.replace("ATTRIBUTE_TYPE_", "").toLowerCase();
  return name.endsWith("_array") ? `${name.slice(0, -"_array".length)}[]` : name;
}

export function printExpression(e: PermissionExpr): string {
  switch (e.kind) {
    case "rewrite": {
      const [left, right] = e.children;
      const r = printExpression(right);
      return `${printExpression(left)} ${OPERATOR[e.op]} ${right.kind === "rewrite" ? `(${r})` : r}`;
    }
    case "computedUserSet":
      return e.relation;
    case "computedAttribute":
      return e.name;
    case "tupleToUserSet":
      return `${e.tupleSet}.${e.computed}`;
    case "call":
      return `${e.ruleName}(${e.arguments.join(", ")})`;
  }
}

function printEntity(e: EntityDefinition): string {
  const lines = [`entity ${e.name} {`];
  for (const r of Object.values(e.relations)) {
    const types = r.references.map((ref) => `@${ref.type}${ref.relation ? `#${ref.relation}` : ""}`);
    lines.push(`    relation ${r.name} ${types.join(" ")}`);
  }
  for (const a of Object.values(e.attributes))
    lines.push(`    attribute ${a.name} ${attributeTypeText(a.type)}`);
  for (const p of Object.values(e.permissions))
    lines.push(`    permission ${p.name} = ${printExpression(p.child)}`);
  lines.push("}");
  return lines.join("\n");
}

/**
 * Permify rebuilds a rule body from the first token after `{` and drops the token right before `}`; a trailing
 * space therefore brings the stored expression back verbatim. An empty expression is written as a lone token.
 */
function printRule(r: RuleDefinition): string {
  const params = r.parameters.map((p) => `${p.name} ${attributeTypeText(p.type)}`).join(", ");
  const body = r.expression === "" ? " _ " : `${r.expression} `;
  return `rule ${r.name}(${params}) {${body}}`;
}

export function printSchema(def: SchemaDefinition): string {
  const parts: string[] = [];
  for (const item of def.order) {
    if (item.kind === "entity") {
      const e = own(def.entities, item.name);
      if (e !== undefined) parts.push(printEntity(e));
    } else {
      const r = own(def.rules, item.name);
      if (r !== undefined) parts.push(printRule(r));
    }
  }
  return `${parts.join("\n\n")}\n`;
}
