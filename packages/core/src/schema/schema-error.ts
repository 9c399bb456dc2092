/**
 * Schema errors: PembaErrors with Permify's positional messages and gRPC code 13 (Permify answers schema
 * parse/compile errors with HTTP 500, code 13). `position` carries the line:column of the message for tools.
 */
import { PembaError } from "../errors.ts";
import type { SourcePosition } from "./ast.ts";

export class SchemaError extends PembaError {
  readonly position: SourcePosition;
  constructor(
    code: "ERROR_CODE_SCHEMA_PARSE" | "ERROR_CODE_SCHEMA_COMPILE",
    message: string,
    position: SourcePosition,
  ) {
    super(code, message, { grpcCode: 13 });
    this.position = position;
  }
}

/** Where a token starts (1-based line and column) and its length in characters. */
export interface TokenSpan {
  line: number;
  column: number;
  length: number;
}

/** `"<line>:<col>:<message>"` parse error. */
export class SchemaParseError extends SchemaError {
  /**
   * The token the parser failed on, for editors: Permify's message position lies right after it or after the token
   * that follows it (and may be on the next line).
   */
  readonly token?: TokenSpan;
  constructor(message: string, position: SourcePosition, token?: TokenSpan) {
    super("ERROR_CODE_SCHEMA_PARSE", message, position);
    this.token = token;
  }
}

/** Permify's compile/validation message: `"<line>:<col>: <error code words, lowercased>"`. */
export function schemaCompileError(pos: SourcePosition, permifyCode: string): SchemaError {
  const words = permifyCode
    .replace(/^ERROR_CODE_/, "")
    .replaceAll("_", " ")
    .toLowerCase();
  return new SchemaError("ERROR_CODE_SCHEMA_COMPILE", `${pos.line}:${pos.column}: ${words}`, pos);
}
