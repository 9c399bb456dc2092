/** The parsed CEL AST as the rule compiler walks it (@bufbuild/cel's protobuf Expr, seen structurally). */

export interface AstNode {
  exprKind: { case: string | undefined; value?: unknown };
}

export interface Comprehension {
  iterVar: string;
  iterVar2?: string;
  accuVar: string;
  iterRange?: AstNode;
  accuInit?: AstNode;
  loopCondition?: AstNode;
  loopStep?: AstNode;
  result?: AstNode;
}

/** A node's sub-expressions in evaluation order (a call's target first, then its arguments). */
export function childrenOf(node: AstNode): (AstNode | undefined)[] {
  const k = node.exprKind;
  switch (k.case) {
    case "selectExpr":
      return [(k.value as { operand?: AstNode }).operand];
    case "callExpr": {
      const c = k.value as { target?: AstNode; args: AstNode[] };
      return [c.target, ...c.args];
    }
    case "listExpr":
      return (k.value as { elements: AstNode[] }).elements;
    case "structExpr":
      return (k.value as { entries: { mapKey?: AstNode; value?: AstNode }[] }).entries.flatMap((e) => [
        e.mapKey,
        e.value,
      ]);
    case "comprehensionExpr": {
      const c = k.value as Comprehension;
      return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result];
    }
    default:
      return [];
  }
}
