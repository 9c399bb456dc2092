/** The explain answer (the agreed wire shape) and its drawing: a tree whose granting path is highlighted. */
import type { Entity } from "@pemba/core";

export interface ProofNode {
  kind: string;
  entity?: Entity;
  name?: string;
  result: "ALLOWED" | "DENIED";
  tuple?: { entity: Entity; relation: string; subject: { type: string; id: string; relation?: string } };
  attribute?: { entity: Entity; attribute: string; value: unknown };
  rule?: { name: string; expression: string; arguments: Record<string, unknown> };
  reason?: string;
  contextual?: boolean;
  children?: ProofNode[];
}

export interface ExplainAnswer {
  can: "CHECK_RESULT_ALLOWED" | "CHECK_RESULT_DENIED";
  metadata: { check_count: number };
  proof: ProofNode;
  truncated: boolean;
}

const subjectText = (s: { type: string; id: string; relation?: string }) =>
  `${s.type}:${s.id}${s.relation ? `#${s.relation}` : ""}`;

/** One line of text for a node: what it decided and what stands behind it. */
export function proofLabel(node: ProofNode): string {
  const where = node.entity ? `${node.entity.type}:${node.entity.id}` : "";
  const name = node.name ? `${where}#${node.name}` : where;
  const parts = [node.kind, name, node.result];
  if (node.tuple) {
    const t = node.tuple;
    parts.push(`tuple ${t.entity.type}:${t.entity.id}#${t.relation}@${subjectText(t.subject)}`);
  }
  if (node.attribute) {
    const a = node.attribute;
    parts.push(
      `attribute ${a.entity.type}:${a.entity.id}$${a.attribute} = ${JSON.stringify(valueData(a.value))}`,
    );
  }
  if (node.rule) {
    parts.push(`rule ${node.rule.name}(${JSON.stringify(node.rule.arguments)}) { ${node.rule.expression} }`);
  }
  if (node.contextual) parts.push("(contextual)");
  if (node.reason) parts.push(`: ${node.reason}`);
  return parts.filter((p) => p !== "").join(" ");
}

const valueData = (v: unknown): unknown =>
  typeof v === "object" && v !== null && "data" in v ? (v as { data: unknown }).data : v;

/**
 * Nodes on the granting path: the root when ALLOWED, and under a granting node the children that granted it
 * (every child of an intersection, the first allowed child otherwise).
 */
export function grantingPath(root: ProofNode): Set<ProofNode> {
  const path = new Set<ProofNode>();
  const walk = (node: ProofNode) => {
    if (node.result !== "ALLOWED") return;
    path.add(node);
    const children = node.children ?? [];
    if (node.kind === "intersection") children.forEach(walk);
    else if (node.kind === "exclusion") {
      if (children[0] !== undefined) walk(children[0]);
    } else {
      const first = children.find((c) => c.result === "ALLOWED");
      if (first !== undefined) walk(first);
    }
  };
  walk(root);
  return path;
}

/** The proof as nested lists; `li.grant` marks the granting path. */
export function renderProof(answer: ExplainAnswer, into: HTMLElement): void {
  into.replaceChildren();
  const path = grantingPath(answer.proof);
  const draw = (node: ProofNode): HTMLLIElement => {
    const li = document.createElement("li");
    li.className = `proof-node ${node.result === "ALLOWED" ? "allowed" : "denied"} kind-${node.kind}`;
    if (path.has(node)) li.classList.add("grant");
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = proofLabel(node);
    li.append(label);
    if (node.children && node.children.length > 0) {
      const ul = document.createElement("ul");
      for (const child of node.children) ul.append(draw(child));
      li.append(ul);
    }
    return li;
  };
  const root = document.createElement("ul");
  root.className = "proof";
  root.append(draw(answer.proof));
  into.append(root);
  if (answer.truncated) {
    const note = document.createElement("p");
    note.className = "truncated";
    note.textContent = "The proof was cut (marked `cut`): the denial tried more branches than are shown.";
    into.append(note);
  }
}

/** Every (entity type, kind, name) a proof touched: what the validation runner's coverage counts. */
export function proofTouches(node: ProofNode, into: Set<string>): void {
  if (node.entity && node.name) {
    if (node.kind === "permission" || node.kind === "relation" || node.kind === "attribute") {
      into.add(`${node.kind} ${node.entity.type}#${node.name}`);
    }
  }
  if (node.rule) into.add(`rule ${node.rule.name}`);
  if (node.tuple) into.add(`relation ${node.tuple.entity.type}#${node.tuple.relation}`);
  if (node.attribute) into.add(`attribute ${node.attribute.entity.type}#${node.attribute.attribute}`);
  for (const child of node.children ?? []) proofTouches(child, into);
}
