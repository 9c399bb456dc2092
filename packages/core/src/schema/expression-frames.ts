/**
 * The open `( ... )` groups of a permission expression while the parser reads it: an explicit stack instead of
 * recursive rule calls, so that nesting costs no call stack, with Permify's depth accounting for the nesting
 * limit (the inside of a group and the right side of an operator are one level deeper).
 */
import type { IToken } from "chevrotain";
import { errorAfter } from "./parser-errors.ts";
import type { SchemaToken } from "./parser-tokens.ts";
import type { RawExpr } from "./raw-ast.ts";
import type { SchemaParseError } from "./schema-error.ts";

/** Nesting bound: Permify (Go, growable stacks) has none; we refuse absurd depths instead of overflowing. */
export const MAX_EXPRESSION_DEPTH = 1000;

const OPERATORS = { AND: "and", OR: "or", NOT: "not" } as const;

function nestingError(after: IToken): SchemaParseError {
  return errorAfter(
    (after as SchemaToken).source,
    `expression nesting exceeds ${MAX_EXPRESSION_DEPTH} levels`,
  );
}

/** Permify's current token is LA(1) when it enters an expression; its lexer has read LA(2). */
export function checkDepth(depth: number, peek: IToken): void {
  if (depth > MAX_EXPRESSION_DEPTH) throw nestingError(peek);
}

interface ExpressionFrame {
  /** Permify's depth of the expression this frame collects (the root, or the inside of a group). */
  depth: number;
  /** Operators so far in this frame's loop. */
  chain: number;
  exp: RawExpr | undefined;
  op: "and" | "or" | "not" | undefined;
}

/** The open `( ... )` groups of an expression, innermost last. */
export class ExpressionFrames {
  readonly #stack: ExpressionFrame[] = [{ depth: 0, chain: 0, exp: undefined, op: undefined }];

  get top(): ExpressionFrame {
    return this.#stack[this.#stack.length - 1];
  }
  get nested(): boolean {
    return this.#stack.length > 1;
  }
  get result(): RawExpr {
    return this.#stack[0].exp as RawExpr;
  }
  open(depth: number): void {
    this.#stack.push({ depth, chain: 0, exp: undefined, op: undefined });
  }
  /** An operator in the top frame; returns the depth of its right operand. */
  operator(opToken: IToken): number {
    const frame = this.top;
    // Permify checks its chain length while the operator is its peek token.
    if (++frame.chain + frame.depth > MAX_EXPRESSION_DEPTH) throw nestingError(opToken);
    frame.op = OPERATORS[(opToken as SchemaToken).source.kind as keyof typeof OPERATORS];
    return frame.depth + 1;
  }

  /** A primary or a closed group: the first value of the top frame, or the right side of its operator. */
  value(right: RawExpr): void {
    const frame = this.top;
    frame.exp =
      frame.op === undefined || frame.exp === undefined
        ? right
        : { kind: "infix", op: frame.op, left: frame.exp, right };
    frame.op = undefined;
  }
  close(): void {
    const group = this.#stack.pop() as ExpressionFrame;
    this.value(group.exp as RawExpr);
  }
}
