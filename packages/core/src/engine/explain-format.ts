/** An explain answer as indented text (what `pemba explain` prints): one line per proof node, ✓ ALLOWED, ✗ DENIED. */
import type { Subject } from "../model.ts";
import type { Explanation, ProofNode, ProofTuple } from "./explain.ts";

const subjectText = (s: Subject): string => `${s.type}:${s.id}${s.relation ? `#${s.relation}` : ""}`;
const tupleText = (t: ProofTuple): string =>
  `${t.entity.type}:${t.entity.id}#${t.relation}@${subjectText(t.subject)}`;

const OPERATIONS = new Set(["union", "intersection", "exclusion"]);

/** One node's line (without the tree's indentation). */
export function proofLine<V extends { data: unknown }>(n: ProofNode<V>): string {
  let line = `${n.result === "ALLOWED" ? "✓" : "✗"} ${n.kind}`;
  if (n.kind === "tuple_to_userset") line += ` ${n.entity.type}:${n.entity.id} ${n.name}`;
  else if (!OPERATIONS.has(n.kind)) line += ` ${n.entity.type}:${n.entity.id}#${n.name}`;
  if (n.attribute !== undefined) line += ` = ${JSON.stringify(n.attribute.value.data)}`;
  if (n.rule !== undefined) {
    const args = Object.entries(n.rule.arguments).map(([k, v]) => `${k}=${JSON.stringify(v.data)}`);
    line += `(${args.join(", ")}) { ${n.rule.expression} }`;
  }
  if (n.tuple !== undefined) line += ` via ${tupleText(n.tuple)}`;
  if (n.contextual) line += " (contextual)";
  if (n.reason !== undefined) line += ` — ${n.reason}`;
  return line;
}

/**
 * The answer as a tree of lines (its proof in model values, or explainToWire's answer); the header names the subject
 * when given.
 */
export function formatExplain<V extends { data: unknown }>(
  out: Omit<Explanation, "proof"> & { proof: ProofNode<V>; truncated?: boolean },
  subject?: Subject,
): string {
  const root = out.proof;
  const decision = out.can === "CHECK_RESULT_ALLOWED" ? "ALLOWED" : "DENIED";
  const question = `${root.entity.type}:${root.entity.id}#${root.name}${subject ? ` for ${subjectText(subject)}` : ""}`;
  const lines = [`${decision} ${question} (check_count ${out.metadata.check_count})`];
  const walk = (n: ProofNode<V>, prefix: string, last: boolean, top: boolean): void => {
    lines.push(top ? proofLine(n) : `${prefix}${last ? "└─ " : "├─ "}${proofLine(n)}`);
    const inner = top ? "" : `${prefix}${last ? "   " : "│  "}`;
    for (let i = 0; i < n.children.length; i++)
      walk(n.children[i], inner, i === n.children.length - 1, false);
  };
  walk(root, "", true, true);
  if (out.truncated) lines.push("(proof truncated: nodes marked cut are decided but not shown)");
  return `${lines.join("\n")}\n`;
}
