/**
 * Where a schema write's text is parsed and checked (runtime-neutral): on the event loop in turns by default, or by a
 * runtime's parser off the event loop (the Node server's worker thread, `@pemba/core/node`). Either way the answer
 * is the SchemaDefinition `parseSchema(text)` gives, or the same error.
 */
import { isPembaError, PembaError } from "../../errors.ts";
import { nextTurn } from "../../next-turn.ts";
import type { SchemaDefinition, SourcePosition } from "../../schema/ast.ts";
import { checkSchema } from "../../schema/check.ts";
import { lexSchema, parseLexedSchema } from "../../schema/parser.ts";
import { applyPartialWriteToText, type EntityPartials } from "../../schema/partial.ts";
import { printSchema } from "../../schema/print.ts";
import { SchemaError, SchemaParseError, type TokenSpan } from "../../schema/schema-error.ts";
import { checkSchemaSize } from "../schema-limits.ts";

export interface SchemaParser {
  /** parseSchema(text): the checked definition, or its SchemaError / PembaError. */
  parse(text: string): Promise<SchemaDefinition>;
  /**
   * A partial write: `partials` applied to the base schema's printed text (`printSchema(base)`), the result printed,
   * size-checked and parsed again (so the stored text and the compiled definition cannot disagree).
   */
  partialWrite(printedBase: string, partials: Record<string, EntityPartials>): Promise<ParsedSchema>;
  /** Frees what the parser holds (a worker thread); later parses start it again. */
  close?(): Promise<void>;
}

export interface ParsedSchema {
  text: string;
  definition: SchemaDefinition;
}

/** The text a partial write stores: the partials applied, printed, within the size limit (errors in that order). */
export function partialWriteText(printedBase: string, partials: Record<string, EntityPartials>): string {
  const text = printSchema(applyPartialWriteToText(printedBase, partials));
  checkSchemaSize(text, "SchemaPartialWriteRequest");
  return text;
}

/** parseSchema(text) in three event-loop turns: the lexer (and the parser's input), the parser, the checks. */
export async function parseInTurns(text: string): Promise<SchemaDefinition> {
  const lexed = lexSchema(text);
  await nextTurn();
  const raw = parseLexedSchema(lexed);
  await nextTurn();
  return checkSchema(raw);
}

/** The default: the event loop, in turns. */
export const inTurnsParser: SchemaParser = {
  parse: parseInTurns,
  async partialWrite(printedBase, partials) {
    const text = partialWriteText(printedBase, partials);
    return { text, definition: await parseInTurns(text) };
  },
};

/** A parse error as plain data, to cross a thread (structured clone keeps no class). */
export interface ParseErrorData {
  kind: "parse" | "schema" | "pemba" | "error";
  code: string;
  message: string;
  grpcCode: number;
  position?: SourcePosition;
  token?: TokenSpan;
}

export function parseErrorData(e: unknown): ParseErrorData {
  if (e instanceof SchemaParseError)
    return {
      kind: "parse",
      code: e.code,
      message: e.message,
      grpcCode: e.grpcCode,
      position: e.position,
      token: e.token,
    };
  if (e instanceof SchemaError)
    return { kind: "schema", code: e.code, message: e.message, grpcCode: e.grpcCode, position: e.position };
  if (isPembaError(e)) return { kind: "pemba", code: e.code, message: e.message, grpcCode: e.grpcCode };
  return { kind: "error", code: "", message: e instanceof Error ? e.message : String(e), grpcCode: 13 };
}

/** The error `parseErrorData` described, of the same class with the same fields. */
export function parseErrorFrom(d: ParseErrorData): Error {
  switch (d.kind) {
    case "parse":
      return new SchemaParseError(d.message, d.position!, d.token);
    case "schema":
      return new SchemaError(
        d.code as "ERROR_CODE_SCHEMA_PARSE" | "ERROR_CODE_SCHEMA_COMPILE",
        d.message,
        d.position!,
      );
    case "pemba":
      return new PembaError(d.code as PembaError["code"], d.message, { grpcCode: d.grpcCode });
    default:
      return new Error(d.message);
  }
}
