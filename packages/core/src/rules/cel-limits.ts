/**
 * The size bounds of a rule body, checked when the rule is compiled (schema write). @bufbuild/cel's parser and
 * planner, and the rule compiler's own AST walks, recurse once per nesting level on the JS stack, so a deep body
 * (1,000 nested parentheses, 10,000 `+ 1` terms, `context.data` followed by 10,000 `.a`) would overflow it. These
 * are cel-go's default parser limits, which Permify compiles rule bodies with: a body over them is refused with
 * cel-go's wording, before any recursion runs.
 */
import type { AstNode } from "./cel-ast.ts";
import { childrenOf } from "./cel-ast.ts";

/** cel-go's `ExpressionSizeCodePointLimit` default: code points of one expression. */
export const MAX_CEL_CODE_POINTS = 100_000;
/** cel-go's `MaxRecursionDepth` default: nesting of brackets and of the parsed expression tree. */
export const MAX_CEL_DEPTH = 250;

export const codePointLimitMessage = (size: number) =>
  `expression code point size exceeds limit: size: ${size}, limit ${MAX_CEL_CODE_POINTS}`;
export const recursionLimitMessage = `expression recursion limit exceeded: ${MAX_CEL_DEPTH}`;

/** Code points of `text` (a surrogate pair counts once), counted without building an array. */
function codePoints(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff || i === 0 || (text.charCodeAt(i - 1) & 0xfc00) !== 0xd800) n++;
  }
  return n;
}

/**
 * The deepest nesting of `(`, `[` and `{` outside string literals, scanned without recursion (the parser recurses
 * once per level before any tree exists to measure).
 */
function bracketDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"' || c === "'") {
      const raw = i > 0 && (text[i - 1] === "r" || text[i - 1] === "R");
      const quote = text.startsWith(c.repeat(3), i) ? c.repeat(3) : c;
      i += quote.length;
      while (i < text.length && !text.startsWith(quote, i)) i += !raw && text[i] === "\\" ? 2 : 1;
      i += quote.length;
      continue;
    }
    if (c === "(" || c === "[" || c === "{") {
      depth++;
      if (depth > max) max = depth;
    } else if ((c === ")" || c === "]" || c === "}") && depth > 0) depth--;
    i++;
  }
  return max;
}

/** The text bounds: the message naming the limit a body breaks, or undefined. */
export function expressionTextLimit(text: string): string | undefined {
  if (text.length > MAX_CEL_CODE_POINTS) {
    const size = codePoints(text);
    if (size > MAX_CEL_CODE_POINTS) return codePointLimitMessage(size);
  }
  if (bracketDepth(text) > MAX_CEL_DEPTH) return recursionLimitMessage;
  return undefined;
}

/** True when the parsed tree nests deeper than MAX_CEL_DEPTH (measured with an explicit stack). */
export function treeTooDeep(root: AstNode): boolean {
  const stack: [AstNode, number][] = [[root, 1]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [node, depth] = top;
    if (depth > MAX_CEL_DEPTH) return true;
    for (const child of childrenOf(node)) if (child) stack.push([child, depth + 1]);
  }
  return false;
}
