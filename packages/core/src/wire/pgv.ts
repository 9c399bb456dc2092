/**
 * Request validation with protoc-gen-validate's messages. Wire schemas are zod objects registered with their proto
 * message name (`protoMessage`); every rule carries PGV's reason text as its zod error, so the first zod issue
 * becomes exactly the message Permify's validator interceptor sends, e.g.
 * `invalid PermissionCheckRequest.Metadata: embedded message failed validation | caused by: invalid
 * PermissionCheckRequestMetadata.Depth: value must be greater than or equal to 3`.
 */
import { z } from "@hono/zod-openapi";
import { PembaError } from "../errors.ts";

const messageNames = new WeakMap<object, string>();

const requiredError = (iss: { input?: unknown }) =>
  iss.input === undefined || iss.input === null ? "value is required" : "value must be a message";

/** A proto message: a zod object (unknown fields stripped) named for PGV messages and the OpenAPI document. */
export function protoMessage<T extends z.ZodRawShape>(name: string, shape: T) {
  const schema = z.object(shape, { error: requiredError }).openapi(name);
  messageNames.set(schema, name);
  return schema;
}

/** proto3 JSON: `null` for a field means its default value, as if the field were missing. */
const nullAsMissing = (value: unknown) => (value === null ? undefined : value);

/** A string field with PGV's `pattern` (+ `max_bytes`) rule; missing or null = "" (proto3 default). */
export function patternString(pattern: string, maxBytes: number, ignoreEmpty = false) {
  const re = new RegExp(ignoreEmpty ? `^$|${pattern}` : pattern);
  return z.preprocess(
    nullAsMissing,
    z
      .string({ error: "value must be a string" })
      .max(maxBytes, { error: `value length must be at most ${maxBytes} bytes` })
      .regex(re, { error: `value does not match regex pattern "${pattern}"` })
      .prefault("")
      .openapi({ pattern, maxLength: maxBytes }),
  );
}

/** An optional proto3 string (missing or null = ""). */
export const plainString = () =>
  z.preprocess(nullAsMissing, z.string({ error: "value must be a string" }).prefault(""));

/** A JSON number written as a string: proto3 JSON (protojson) accepts `"10"` for an integer field. */
const NUMBER_TEXT = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
const numberFromText = (value: unknown) =>
  typeof value === "string" && NUMBER_TEXT.test(value) ? Number(value) : nullAsMissing(value);

/**
 * A proto3 integer field: a JSON number or a string holding one; missing or null = 0. Above the type's maximum:
 * refused (protojson refuses to decode it).
 */
const protoInteger = (min: number, max: number) =>
  z.preprocess(
    numberFromText,
    z
      .number({ error: "value must be a number" })
      .int({ error: "value must be an integer" })
      .gte(min, { error: `value must be greater than or equal to ${min}` })
      .lte(max, { error: `value must be less than or equal to ${max}` })
      .prefault(0),
  );

/** int32 with PGV `gte`; missing = 0 (so a missing depth fails like Permify's). */
export const int32AtLeast = (min: number) => protoInteger(min, 2147483647);

export const uint32 = () => protoInteger(0, 4294967295);

export const repeated = <T extends z.ZodType>(item: T, min = 0, max?: number) => {
  let s = z.array(item, { error: "value must be a list" });
  if (min > 0) s = s.min(min, { error: `value must contain at least ${min} item(s)` });
  if (max !== undefined) s = s.max(max, { error: `value must contain no more than ${max} item(s)` });
  return z.preprocess(nullAsMissing, s.prefault([]));
};

/** An optional message field: missing or null = absent. */
export const optionalMessage = <T extends z.ZodType>(message: T) =>
  z.preprocess(nullAsMissing, message.optional());

type AnySchema = z.core.$ZodType;

function unwrap(schema: AnySchema): AnySchema {
  for (;;) {
    const def = schema._zod.def as unknown as Record<string, AnySchema> & { type: string };
    if (
      def.type === "optional" ||
      def.type === "nullable" ||
      def.type === "default" ||
      def.type === "prefault"
    )
      schema = def.innerType;
    else if (def.type === "pipe") {
      // z.preprocess(f, schema) is pipe(transform, schema): the field's shape is the schema's
      schema = (def.in._zod.def as { type: string }).type === "transform" ? def.out : def.in;
    } else return schema;
  }
}

const camel = (field: string) =>
  field
    .split("_")
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join("");

/** PGV's text for the first issue of a failed parse of `root`. */
export function pgvMessage(root: AnySchema, issue: z.core.$ZodIssue): string {
  let schema = unwrap(root);
  let out = "";
  const path = issue.path;
  let i = 0;
  while (i < path.length) {
    const name = messageNames.get(schema) ?? "Message";
    const key = String(path[i]);
    const fieldDef = (schema._zod.def as unknown as { shape?: Record<string, AnySchema> }).shape?.[key];
    if (fieldDef === undefined) break;
    let field = camel(key);
    let next = unwrap(fieldDef);
    i++;
    const kind = (next._zod.def as { type: string }).type;
    if ((kind === "array" || kind === "record") && i < path.length) {
      const index = path[i];
      field += typeof index === "number" ? `[${index}]` : `[${JSON.stringify(String(index))}]`;
      const def = next._zod.def as unknown as { element?: AnySchema; valueType?: AnySchema };
      next = unwrap((def.element ?? def.valueType) as AnySchema);
      i++;
    }
    out += `invalid ${name}.${field}: `;
    if (i < path.length) out += "embedded message failed validation | caused by: ";
    schema = next;
  }
  return out + issue.message;
}

/** Parses `body` with `schema`; throws PembaError (gRPC 3 / HTTP 400) with PGV's message on the first issue. */
export function parseWire<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body, { reportInput: true });
  if (result.success) return result.data;
  throw new PembaError("ERROR_CODE_VALIDATION", pgvMessage(schema, result.error.issues[0]), { grpcCode: 3 });
}
