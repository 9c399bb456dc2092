/**
 * Tokens of the Permify schema language, lexed with chevrotain. Token type names are Permify's (`LCB`, `SIGN`,
 * `NEWLINE`, ...) because they appear verbatim in parse error messages.
 *
 * Positions follow Permify's lexer exactly (pkg/dsl/lexer): it works on bytes, counts every `\r` and `\n` outside
 * comments and strings as a new line, and its column counter runs one ahead of the 1-based column, so a token at
 * the start of a line is at column 2. Error messages quote the lexer's position *after* the last token it read.
 */
import { createToken, Lexer, type TokenType } from "chevrotain";

export type TokenKind =
  | "EOF"
  | "ILLEGAL"
  | "NEWLINE"
  | "IDENT"
  | "STRING"
  | "INTEGER"
  | "DOUBLE"
  | "BOOLEAN"
  | "COMMA"
  | "LCB"
  | "RCB"
  | "LP"
  | "RP"
  | "ASSIGN"
  | "SIGN"
  | "COLON"
  | "HASH"
  | "QM"
  | "DOT"
  | "LSB"
  | "RSB"
  | "EXCL"
  | "PLUS"
  | "MINUS"
  | "TIMES"
  | "DIVIDE"
  | "MOD"
  | "POW"
  | "GT"
  | "LT"
  | "APOSTROPHE"
  | "AMPERSAND"
  | "ENTITY"
  | "RELATION"
  | "PERMISSION"
  | "ATTRIBUTE"
  | "RULE"
  | "AND"
  | "OR"
  | "NOT"
  | "IN"
  | "SINGLE_LINE_COMMENT"
  | "MULTI_LINE_COMMENT"
  | "SPACE"
  | "TAB";

export interface Token {
  kind: TokenKind;
  /** Permify's literal: strings without quotes (escapes resolved), comments without markers. */
  literal: string;
  /** Byte offsets [start, end) in the input. */
  start: number;
  end: number;
  /** Line of the token start and the byte offset of the newline that began that line (-1 on line 1). */
  line: number;
  lineStart: number;
  /** True for `\r`/`\n` NEWLINE tokens (not `;`): they advance the line counter. */
  breaksLine: boolean;
}

const KEYWORDS: Record<string, TokenKind> = {
  entity: "ENTITY",
  relation: "RELATION",
  action: "PERMISSION",
  permission: "PERMISSION",
  rule: "RULE",
  attribute: "ATTRIBUTE",
  and: "AND",
  or: "OR",
  not: "NOT",
  in: "IN",
  true: "BOOLEAN",
  false: "BOOLEAN",
};

const SINGLE_CHAR: Record<string, TokenKind> = {
  "\n": "NEWLINE",
  "\r": "NEWLINE",
  ";": "NEWLINE",
  ":": "COLON",
  "=": "ASSIGN",
  "@": "SIGN",
  "(": "LP",
  ")": "RP",
  "{": "LCB",
  "}": "RCB",
  "[": "LSB",
  "]": "RSB",
  "+": "PLUS",
  "-": "MINUS",
  "*": "TIMES",
  "%": "MOD",
  "^": "POW",
  ">": "GT",
  "<": "LT",
  "!": "EXCL",
  "?": "QM",
  ",": "COMMA",
  "#": "HASH",
  ".": "DOT",
  "'": "APOSTROPHE",
  "&": "AMPERSAND",
  "/": "DIVIDE",
  " ": "SPACE",
  "\t": "TAB",
  "\u0000": "EOF",
};

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is end of input for Permify
const SingleLineComment = createToken({ name: "SINGLE_LINE_COMMENT", pattern: /\/\/[^\r\n\u0000]*/ });
// Non-nesting; an unterminated comment runs to the end of input (or a NUL byte, which Permify treats as EOF).
const MultiLineComment = createToken({
  name: "MULTI_LINE_COMMENT",
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is end of input for Permify
  pattern: /\/\*[^\u0000]*?(?:\*\/|(?=\u0000)|$)/,
  line_breaks: true,
});
const StringLiteral = createToken({
  name: "STRING",
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is end of input for Permify
  pattern: /"(?:[^"\\\u0000]|\\[\s\S]?)*"?/,
  line_breaks: true,
});
const Identifier = createToken({ name: "IDENT", pattern: /[A-Za-z_]+/ });
const NumberLiteral = createToken({ name: "NUMBER", pattern: /[0-9]+(?:\.[0-9]*)?/ });
const SingleChar = createToken({
  name: "CHAR",
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is end of input for Permify
  pattern: /[\n\r;:=@(){}[\]+\-*%^><!?,#.'&/ \t\u0000]/,
  line_breaks: true,
});
// `[\s\S]` trips chevrotain's first-char optimisation; an explicit range does not.
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is end of input for Permify
const Illegal = createToken({ name: "ILLEGAL", pattern: /[\u0000-\uffff]/, line_breaks: true });

const TOKEN_TYPES: TokenType[] = [
  SingleLineComment,
  MultiLineComment,
  StringLiteral,
  Identifier,
  NumberLiteral,
  SingleChar,
  Illegal,
];

const chevrotainLexer = new Lexer(TOKEN_TYPES, {
  positionTracking: "onlyOffset",
  ensureOptimizations: false,
  skipValidations: true,
});

const IGNORED: ReadonlySet<TokenKind> = new Set([
  "SPACE",
  "TAB",
  "SINGLE_LINE_COMMENT",
  "MULTI_LINE_COMMENT",
]);

export const isIgnored = (kind: TokenKind | ""): boolean => kind !== "" && IGNORED.has(kind);

/** Permify lexes bytes: non-ASCII input is turned into a one-char-per-byte string so offsets are byte offsets. */
function toByteString(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII range check
  if (/^[\u0000-\u007f]*$/.test(text)) return text;
  const bytes = new TextEncoder().encode(text);
  let out = "";
  for (let i = 0; i < bytes.length; i += 4096) {
    out += String.fromCharCode(...bytes.subarray(i, i + 4096));
  }
  return out;
}

function fromByteString(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII range check
  if (/^[\u0000-\u007f]*$/.test(s)) return s;
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}

/** Permify's string literal: content without quotes; `\n \t \" \\` resolved, other escapes dropped. */
function stringLiteral(image: string): string {
  const closed = image.length >= 2 && image.endsWith('"') && !isEscapedQuote(image);
  const body = image.slice(1, closed ? -1 : undefined);
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== "\\") {
      out += c;
      continue;
    }
    const e = body[++i];
    if (e === "n") out += "\n";
    else if (e === "t") out += "\t";
    else if (e === '"') out += '"';
    else if (e === "\\") out += "\\";
  }
  return fromByteString(out);
}

/** `"abc\"` (unterminated, ending in an escaped quote) must not count as closed. */
function isEscapedQuote(image: string): boolean {
  let backslashes = 0;
  for (let i = image.length - 2; i >= 1 && image[i] === "\\"; i--) backslashes++;
  return backslashes % 2 === 1;
}

function commentLiteral(image: string, kind: "SINGLE_LINE_COMMENT" | "MULTI_LINE_COMMENT"): string {
  if (kind === "SINGLE_LINE_COMMENT") return fromByteString(image.slice(2));
  const closed = image.length >= 4 && image.endsWith("*/");
  return fromByteString(image.slice(2, closed ? -2 : undefined));
}

export interface LexedInput {
  tokens: Token[];
  /** Length in bytes. */
  length: number;
  /** Line and newline offset at the end of input (for virtual EOF tokens). */
  endLine: number;
  endLineStart: number;
}

export function lex(text: string): LexedInput {
  const input = toByteString(text);
  const result = chevrotainLexer.tokenize(input);
  const tokens: Token[] = new Array(result.tokens.length);
  let line = 1;
  let lineStart = -1;
  for (let i = 0; i < result.tokens.length; i++) {
    const t = result.tokens[i];
    const image = t.image;
    const start = t.startOffset;
    const end = start + image.length;
    const name = t.tokenType.name;
    let kind: TokenKind;
    let literal = image;
    if (name === "IDENT") kind = KEYWORDS[image] ?? "IDENT";
    else if (name === "NUMBER") kind = image.includes(".") ? "DOUBLE" : "INTEGER";
    else if (name === "CHAR") {
      kind = SINGLE_CHAR[image];
      if (kind === "EOF") literal = "";
    } else if (name === "STRING") {
      kind = "STRING";
      literal = stringLiteral(image);
    } else if (name === "SINGLE_LINE_COMMENT" || name === "MULTI_LINE_COMMENT") {
      kind = name;
      literal = commentLiteral(image, name);
    } else {
      kind = "ILLEGAL";
      literal = fromByteString(image);
    }
    const breaksLine = kind === "NEWLINE" && image !== ";";
    tokens[i] = { kind, literal, start, end, line, lineStart, breaksLine };
    if (breaksLine) {
      line++;
      lineStart = start;
    }
  }
  return { tokens, length: input.length, endLine: line, endLineStart: lineStart };
}

/** Permify's position of a token: its line and its (one-ahead) column. */
export function tokenPosition(t: Token): { line: number; column: number } {
  if (t.breaksLine) return { line: t.line + 1, column: 1 };
  return { line: t.line, column: t.start - t.lineStart + 1 };
}

/** Permify's lexer position right after reading `t` (what parse errors report). */
export function positionAfter(t: Token): { line: number; column: number } {
  if (t.breaksLine) return { line: t.line + 1, column: 2 };
  return { line: t.line, column: t.end - t.lineStart + 1 };
}
