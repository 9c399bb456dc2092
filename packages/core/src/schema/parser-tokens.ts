/**
 * The chevrotain view of the lexer's output: one chevrotain token type per Permify token kind, the token
 * categories the grammar matches on, and the parser input — the non-ignored tokens (each keeping its lexer token
 * and its index in the raw stream, for positions and rule bodies) followed by the EOF tokens Permify's lexer keeps
 * producing past the end of input, one column further each time.
 */
import { createToken, type IToken, Lexer, type TokenType } from "chevrotain";
import { isIgnored, type LexedInput, type Token, type TokenKind } from "./lexer.ts";

const KINDS: readonly TokenKind[] = [
  "EOF",
  "ILLEGAL",
  "NEWLINE",
  "IDENT",
  "STRING",
  "INTEGER",
  "DOUBLE",
  "BOOLEAN",
  "COMMA",
  "LCB",
  "RCB",
  "LP",
  "RP",
  "ASSIGN",
  "SIGN",
  "COLON",
  "HASH",
  "QM",
  "DOT",
  "LSB",
  "RSB",
  "EXCL",
  "PLUS",
  "MINUS",
  "TIMES",
  "DIVIDE",
  "MOD",
  "POW",
  "GT",
  "LT",
  "APOSTROPHE",
  "AMPERSAND",
  "ENTITY",
  "RELATION",
  "PERMISSION",
  "ATTRIBUTE",
  "RULE",
  "AND",
  "OR",
  "NOT",
  "IN",
  "SINGLE_LINE_COMMENT",
  "MULTI_LINE_COMMENT",
  "SPACE",
  "TAB",
];

const category = (name: string): TokenType => createToken({ name, pattern: Lexer.NA });

/** Token categories: what the grammar accepts in places Permify takes "any token but ...". */
export const Category = {
  /** Any token (the first token of a rule body). */
  Any: category("ANY_TOKEN"),
  /** Rule body tokens: anything up to the first `}` or EOF. */
  Body: category("BODY_TOKEN"),
  /** Skipped between top-level statements: anything but `entity`, `rule` and EOF. */
  TopLevelJunk: category("TOP_LEVEL_JUNK"),
  /** Skipped before a partial-write statement: anything but `relation`, `attribute`, `permission` and EOF. */
  MemberJunk: category("MEMBER_JUNK"),
  /** The infix operators `and`, `or`, `not`. */
  Operator: category("OPERATOR"),
};

function categoriesOf(kind: TokenKind): TokenType[] {
  const cats = [Category.Any];
  if (kind !== "RCB" && kind !== "EOF") cats.push(Category.Body);
  if (kind !== "ENTITY" && kind !== "RULE" && kind !== "EOF") cats.push(Category.TopLevelJunk);
  if (kind !== "RELATION" && kind !== "ATTRIBUTE" && kind !== "PERMISSION" && kind !== "EOF") {
    cats.push(Category.MemberJunk);
  }
  if (kind === "AND" || kind === "OR" || kind === "NOT") cats.push(Category.Operator);
  return cats;
}

/** Chevrotain token type per Permify token kind; the type names are the kinds quoted in error messages. */
export const T = Object.fromEntries(
  KINDS.map((kind) => [kind, createToken({ name: kind, pattern: Lexer.NA, categories: categoriesOf(kind) })]),
) as Record<TokenKind, TokenType>;

export const ALL_TOKEN_TYPES: TokenType[] = [...Object.values(Category), ...Object.values(T)];

/** A parser input token: chevrotain's fields plus the lexer token it stands for. */
export interface SchemaToken extends IToken {
  readonly source: Token;
  /** Index in the parser input (non-ignored tokens, then virtual EOFs). */
  readonly index: number;
  /** Index in the lexer's full token stream (the length of that stream for virtual EOFs). */
  readonly rawIndex: number;
}

/** Past the end Permify's lexer returns EOF again and again; the parser never looks further than this. */
const VIRTUAL_EOFS = 4;

const KNOWN_KINDS: ReadonlySet<string> = new Set(KINDS);

/**
 * The lexer's keyword table is a plain object, so words like `constructor` or `__proto__` come out with a
 * prototype member as their kind; they are identifiers.
 */
function normalized(token: Token): Token {
  return KNOWN_KINDS.has(token.kind) ? token : { ...token, kind: "IDENT" };
}

function schemaToken(lexed: Token, index: number, rawIndex: number): SchemaToken {
  const source = normalized(lexed);
  const tokenType = T[source.kind];
  return {
    image: source.literal,
    startOffset: source.start,
    endOffset: source.end - 1,
    tokenType,
    tokenTypeIdx: tokenType.tokenTypeIdx as number,
    source,
    index,
    rawIndex,
  };
}

/** The parser input for `input`: its non-ignored tokens, then the virtual EOFs. */
export function parserInput(input: LexedInput): SchemaToken[] {
  const out: SchemaToken[] = [];
  const { tokens } = input;
  for (let i = 0; i < tokens.length; i++) {
    if (!isIgnored(tokens[i].kind)) out.push(schemaToken(tokens[i], out.length, i));
  }
  for (let k = 0; k < VIRTUAL_EOFS; k++) {
    const start = input.length + k;
    const eof: Token = {
      kind: "EOF",
      literal: "",
      start,
      end: start + 1,
      line: input.endLine,
      lineStart: input.endLineStart,
      breaksLine: false,
    };
    out.push(schemaToken(eof, out.length, tokens.length));
  }
  return out;
}
