/** The explain answer drawn as a tree whose granting path is highlighted; the coverage a proof shows. */
import { type ExplainResponse, type WireProofNode as ProofNode, proofLine } from "@pemba/core";

/**
 * Nodes on the granting path: the root when ALLOWED, and under a granting node the children that granted it
 * (every child of an intersection, the first allowed child otherwise).
 */
export function grantingPath(root: ProofNode): Set<ProofNode> {
  const path = new Set<ProofNode>();
  const walk = (node: ProofNode) => {
    if (node.result !== "ALLOWED") return;
    path.add(node);
    const children = node.children;
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
export function renderProof(answer: ExplainResponse, into: HTMLElement): void {
  into.replaceChildren();
  const path = grantingPath(answer.proof);
  const draw = (node: ProofNode): HTMLLIElement => {
    const li = document.createElement("li");
    li.className = `proof-node ${node.result === "ALLOWED" ? "allowed" : "denied"} kind-${node.kind}`;
    if (path.has(node)) li.classList.add("grant");
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = proofLine(node);
    li.append(label);
    if (node.children.length > 0) {
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
  if (node.kind === "permission" || node.kind === "relation" || node.kind === "attribute") {
    into.add(`${node.kind} ${node.entity.type}#${node.name}`);
  }
  if (node.rule) into.add(`rule ${node.rule.name}`);
  if (node.tuple) into.add(`relation ${node.tuple.entity.type}#${node.tuple.relation}`);
  if (node.attribute) into.add(`attribute ${node.attribute.entity.type}#${node.attribute.attribute}`);
  for (const child of node.children) proofTouches(child, into);
}
