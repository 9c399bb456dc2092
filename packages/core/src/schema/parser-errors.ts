/**
 * Permify's parse errors from chevrotain's recognition exceptions.
 *
 * Permify's parser keeps a current and a peek token, and its messages quote the lexer position right after the
 * last token read — the peek token. When chevrotain fails on its next token LA(1), Permify failed either on its
 * peek token (`expected next token to be X, got Y instead`: position after LA(1)) or on its current token
 * (`expected token to be ...`, `no prefix parse function ...`: position after LA(2)).
 */
import type { IParserErrorMessageProvider, IRecognitionException } from "chevrotain";
import { positionAfter, type Token } from "./lexer.ts";
import type { SchemaToken } from "./parser-tokens.ts";
import { SchemaParseError } from "./schema-error.ts";

/** Chevrotain's messages carry only what the mapping needs: the expected token type of a mismatch. */
export const ERROR_MESSAGES: IParserErrorMessageProvider = {
  buildMismatchTokenMessage: ({ expected }) => expected.name,
  buildNotAllInputParsedMessage: () => "",
  buildNoViableAltMessage: () => "",
  buildEarlyExitMessage: () => "",
};

/** `"<line>:<col>:<message>"` at Permify's lexer position right after `t`; `offending` is the token failed on. */
export function errorAfter(t: Token, message: string, offending?: Token): SchemaParseError {
  const p = positionAfter(t);
  const span = offending && {
    line: offending.line,
    column: offending.start - offending.lineStart,
    length: offending.end - offending.start,
  };
  return new SchemaParseError(`${p.line}:${p.column}:${message}`, p, span);
}

export function toPermifyError(e: IRecognitionException, tokens: readonly SchemaToken[]): SchemaParseError {
  const token = e.token as SchemaToken;
  const got = token.source.kind;
  // Permify's peek token when chevrotain's LA(1) is its current token.
  const peek = tokens[Math.min(token.index + 1, tokens.length - 1)].source;
  const rule = e.context.ruleStack[e.context.ruleStack.length - 1];
  const peekError = (expected: string) =>
    errorAfter(token.source, `expected next token to be ${expected}, got ${got} instead`, token.source);
  const currentError = (expected: string) =>
    errorAfter(peek, `expected token to be ${expected}, got ${got} instead`, token.source);

  switch (e.name) {
    case "NoViableAltException":
      if (rule === "callArguments") return currentError("IDENT");
      return errorAfter(peek, `no prefix parse function for ${got} found`, token.source);
    case "EarlyExitException":
      return peekError("SIGN");
    default: {
      const expected = e.message;
      if (rule === "entity" && expected === "RCB") {
        return currentError(got === "EOF" ? "RCB" : "RELATION, PERMISSION, ATTRIBUTE");
      }
      if (rule === "ruleParameters" && expected === "RP") {
        // After `(` or `,` Permify expects a parameter name.
        const previous = tokens[token.index - 1]?.source.kind;
        if (previous === "LP" || previous === "COMMA") return peekError("IDENT");
      }
      return peekError(expected);
    }
  }
}
