/**
 * Schema diagnostics from @pemba/core's real parser and checker, run in the page. A parse error is placed on the
 * token the parser failed on (Permify's message position lies after it, sometimes on the next line); a compile
 * error on the position its message names.
 */
import { type SchemaDefinition, SchemaError, SchemaParseError, tryParseSchema } from "@pemba/core";

export interface SchemaDiagnostic {
  /** 1-based line and column of the mark. */
  line: number;
  column: number;
  /** Offsets into the text: where the mark starts and ends. */
  from: number;
  to: number;
  /** The parser's message as Permify words it (with Permify's own line:col first). */
  message: string;
  /** The message without Permify's position. */
  text: string;
}

export type DiagnoseResult =
  | { ok: true; schema: SchemaDefinition; diagnostics: [] }
  | { ok: false; diagnostics: SchemaDiagnostic[] };

/** Offset of the start of line `line` (1-based) and of its end (before its newline). */
function lineBounds(text: string, line: number): { start: number; end: number } {
  let start = 0;
  for (let l = 1; l < line; l++) {
    const next = text.indexOf("\n", start);
    if (next === -1) return { start: text.length, end: text.length };
    start = next + 1;
  }
  const end = text.indexOf("\n", start);
  return { start, end: end === -1 ? text.length : end };
}

export function diagnose(text: string): DiagnoseResult {
  const result = tryParseSchema(text);
  if (result.ok) return { ok: true, schema: result.schema, diagnostics: [] };
  const error = result.error;
  const message = error.message;
  const position = /^(\d+):(\d+):\s?/.exec(message);
  const words = position ? message.slice(position[0].length) : message;
  let line = 1;
  let column = 1;
  let length = 0;
  if (error instanceof SchemaParseError && error.token !== undefined) {
    ({ line, column, length } = error.token);
  } else if (error instanceof SchemaError) {
    ({ line, column } = error.position);
  }
  const bounds = lineBounds(text, line);
  const from = Math.min(bounds.start + column - 1, bounds.end);
  // the token at the mark: its length when the parser gave it, else up to the next blank
  if (length === 0) length = /^\S*/.exec(text.slice(from, bounds.end))![0].length;
  const to = Math.min(Math.max(from + length, from + 1), text.length);
  return {
    ok: false,
    diagnostics: [{ line, column, from: Math.min(from, to), to, message, text: words }],
  };
}
