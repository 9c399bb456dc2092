/**
 * The size of a schema write. Compiling a schema runs on the event loop (the compiled closures live where checks
 * run), and so does its parse in the Worker (no other thread; the Node server parses on a worker thread,
 * SchemaParseWorker), so one write must not take longer than other tenants' requests may wait: about 40 ms for the
 * largest schema these limits admit (loadtest/bench-schema-stall.ts measures it). Checked before the schema is parsed (its size) and before its rules are compiled (their bodies), on writes
 * only: a stored schema is always read back.
 */
import { PembaError } from "../errors.ts";
import type { SchemaDefinition } from "../schema/ast.ts";
import { schemaCompileError } from "../schema/schema-error.ts";

/** Bytes (UTF-8) of a schema's text. */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** Characters of all rule bodies of one schema together, without leading and trailing blanks (CEL parses at ~2 µs
 * per character). */
export const MAX_SCHEMA_RULE_CHARS = 8 * 1024;

const encoder = new TextEncoder();

/** Refuses a schema text over MAX_SCHEMA_BYTES, as a PGV `max_bytes` rule on the request's field would. */
export function checkSchemaSize(text: string, requestName = "SchemaWriteRequest", field = "Schema"): void {
  // a UTF-8 character takes at most 3 bytes per UTF-16 unit: count only near the limit
  if (text.length * 3 <= MAX_SCHEMA_BYTES) return;
  const bytes = text.length > MAX_SCHEMA_BYTES ? text.length : encoder.encode(text).length;
  if (bytes <= MAX_SCHEMA_BYTES) return;
  throw new PembaError(
    "ERROR_CODE_VALIDATION",
    `invalid ${requestName}.${field}: value length must be at most ${MAX_SCHEMA_BYTES} bytes`,
    { grpcCode: 3 },
  );
}

/** Refuses rules whose bodies together exceed MAX_SCHEMA_RULE_CHARS, at the rule that crosses it. */
export function checkRuleBodies(definition: SchemaDefinition): void {
  let total = 0;
  for (const rule of Object.values(definition.rules)) {
    total += rule.expression.trim().length;
    if (total > MAX_SCHEMA_RULE_CHARS)
      throw schemaCompileError(
        rule.pos,
        `ERROR_CODE_RULE_BODIES_EXCEED_${MAX_SCHEMA_RULE_CHARS}_CHARACTERS_IN_ONE_SCHEMA`,
      );
  }
}
