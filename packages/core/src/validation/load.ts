/**
 * Steps 1–3 of `permify validate`: decode the file, load + parse + compile the schema, then parse, validate and
 * write the relationships and attributes into a fresh in-memory store (tenant t1). A schema error or a
 * tuple/attribute that violates the schema stops the run (ValidationAbort); a string that does not even parse is
 * recorded as a problem and skipped, as Permify does.
 */
import { type CompiledSchema, compileSchema } from "../compile/index.ts";
import { isPembaError } from "../errors.ts";
import type { Attribute, Tuple } from "../model.ts";
import type { SchemaDefinition } from "../schema/ast.ts";
import {
  parseAttributeString,
  parseSchema,
  parseTupleString,
  SchemaError,
  validateAttribute,
  validateTuple,
} from "../schema/index.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import type { Snap, Store } from "../store/store.ts";
import type { RunAbort, RunProblem } from "./report.ts";
import { loadSchemaText, type SchemaFileReader } from "./schema-source.ts";
import type { LocatedString, Shape } from "./shape.ts";
import { decodeShape, ShapeFormatError } from "./shape.ts";

export interface ValidateOptions {
  /** Write relationships and attributes without validating them against the schema. */
  unchecked?: boolean;
  /**
   * Reads the file a path-like `schema:` value names (`schemaFiles(dir)` from `@pemba/core/node`: relative to the
   * validation file's folder); without it, such a value is taken as the schema's DSL.
   */
  readSchemaFile?: SchemaFileReader;
  /** Depth used for every query instead of the file's (must be >= 3). */
  depthOverride?: number;
}

/** The run stopped before the scenarios; `abort` says where and why. */
export class ValidationAbort extends Error {
  readonly abort: RunAbort;
  constructor(abort: RunAbort) {
    super(abort.message);
    this.name = "ValidationAbort";
    this.abort = abort;
  }
}

/** A decoded file whose data sits in its own store, ready for engine queries. */
export interface LoadedShape {
  shape: Shape;
  schema: SchemaDefinition;
  compiled: CompiledSchema;
  store: Store;
  tenantId: string;
  /** The snapshot after the file's data was written. */
  snap: Snap;
  /** Relationships/attributes that did not parse (skipped). */
  problems: RunProblem[];
}

export const VALIDATION_TENANT = "t1";

/** Text of an error for reports: the ERROR_CODE name, plus the message when it says more. */
export function errorText(e: unknown): string {
  if (isPembaError(e)) return e.message === e.code ? e.code : `${e.code}: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

async function loadSchema(
  shape: Shape,
  opts: ValidateOptions,
): Promise<{ def: SchemaDefinition; text: string }> {
  let text: string;
  try {
    text = await loadSchemaText(shape.schema, opts.readSchemaFile);
  } catch (e) {
    throw new ValidationAbort({ stage: "schema", message: errorText(e), line: shape.schemaLine });
  }
  try {
    return { def: parseSchema(text), text };
  } catch (e) {
    // A position inside an inline `|` block maps onto the file; otherwise point at the `schema` key.
    const inline = text === shape.schema && shape.schemaIsLiteralBlock;
    const line = inline && e instanceof SchemaError ? shape.schemaLine + e.position.line : shape.schemaLine;
    throw new ValidationAbort({
      stage: "schema",
      code: isPembaError(e) ? e.code : undefined,
      message: errorText(e),
      line,
    });
  }
}

function readData<T>(
  stage: "relationships" | "attributes",
  items: LocatedString[],
  parse: (s: string) => T,
  validate: ((item: T) => void) | undefined,
  problems: RunProblem[],
): T[] {
  const out: T[] = [];
  for (const item of items) {
    let parsed: T;
    try {
      parsed = parse(item.value);
    } catch (e) {
      problems.push({ stage, key: item.value, line: item.line, message: errorText(e) });
      continue;
    }
    try {
      validate?.(parsed);
    } catch (e) {
      throw new ValidationAbort({
        stage,
        code: isPembaError(e) ? e.code : undefined,
        message: errorText(e),
        key: item.value,
        line: item.line,
      });
    }
    out.push(parsed);
  }
  return out;
}

/** Decodes and loads a validation file; throws ValidationAbort when the run cannot start. */
export async function loadShape(text: string, opts: ValidateOptions = {}): Promise<LoadedShape> {
  let shape: Shape;
  try {
    shape = decodeShape(text);
  } catch (e) {
    if (e instanceof ShapeFormatError) {
      throw new ValidationAbort({ stage: "file", message: e.message, line: e.problems[0]?.line });
    }
    throw e;
  }
  const { def, text: schemaText } = await loadSchema(shape, opts);
  let compiled: CompiledSchema;
  try {
    compiled = compileSchema(def);
  } catch (e) {
    throw new ValidationAbort({
      stage: "schema",
      code: isPembaError(e) ? e.code : undefined,
      message: errorText(e),
    });
  }

  const problems: RunProblem[] = [];
  const tuples = readData<Tuple>(
    "relationships",
    shape.relationships,
    parseTupleString,
    opts.unchecked ? undefined : (t) => validateTuple(def, t),
    problems,
  );
  const attributes = readData<Attribute>(
    "attributes",
    shape.attributes,
    parseAttributeString,
    opts.unchecked ? undefined : (a) => validateAttribute(def, a),
    problems,
  );

  const store = new MemoryStore();
  await store.writeSchema(VALIDATION_TENANT, "validation", schemaText);
  if (tuples.length > 0 || attributes.length > 0)
    await store.write(VALIDATION_TENANT, { tuples, attributes });
  const snap = await store.headSnap(VALIDATION_TENANT);
  return { shape, schema: def, compiled, store, tenantId: VALIDATION_TENANT, snap, problems };
}
