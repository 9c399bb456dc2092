/** DSL text -> checked SchemaDefinition (Permify's parser + compiler, minus CEL type-checking of rule bodies). */
import { isPembaError, PembaError } from "../errors.ts";
import type { SchemaDefinition } from "./ast.ts";
import { checkSchema } from "./check.ts";
import { parseRawSchema } from "./parser.ts";

/** Parses and checks `text`. Throws PembaError: ERROR_CODE_SCHEMA_PARSE / ERROR_CODE_SCHEMA_COMPILE (gRPC 13). */
export function parseSchema(text: string): SchemaDefinition {
  return checkSchema(parseRawSchema(text));
}

export type SchemaParseResult = { ok: true; schema: SchemaDefinition } | { ok: false; error: PembaError };

/** parseSchema that never throws. */
export function tryParseSchema(text: string): SchemaParseResult {
  try {
    return { ok: true, schema: parseSchema(text) };
  } catch (e) {
    if (isPembaError(e)) return { ok: false, error: e };
    return { ok: false, error: new PembaError("ERROR_CODE_SCHEMA_PARSE", String(e), { grpcCode: 13 }) };
  }
}
