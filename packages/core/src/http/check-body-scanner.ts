/**
 * A fast path of the check endpoint: reads the common check body straight from its text, without JSON.parse and
 * without zod (the two were most of the validation cost of a check; see loadtest/RESULTS.md for the A/B).
 *
 * Contract: zod's wire schema (`PermissionCheckRequestSchema`) is the definition of a valid request. For every
 * text the scanner accepts, JSON.parse accepts it and zod's parse gives the same request (a fast-check property
 * test compares the two on generated and mutated bodies). It returns undefined for anything it does not handle
 * (escapes in strings, duplicate keys, a context, arguments, numbers as strings, deep nesting, invalid JSON,
 * invalid values), and the caller takes the general path: JSON.parse, then zod, which also words the errors.
 *
 * The scanner keeps its cursor in module variables: it runs synchronously and never re-enters.
 */
import type { CheckQuery } from "../engine/types.ts";
import type { PermissionMetadata } from "../service/index.ts";

export interface ScannedCheck {
  meta: PermissionMetadata;
  query: CheckQuery;
}

/** A valid check depth: an int32 (Permify's type) of at least 3. */
const isCheckDepth = (depth: number): boolean => Number.isInteger(depth) && depth >= 3 && depth <= 2147483647;

/** Nesting accepted inside skipped values (unknown fields); deeper goes to the general path. */
const MAX_SKIP_NESTING = 16;

let src = "";
let pos = 0;

// The string fields of one scan, as [start, stop) in src: start -1 when absent, -2 (and stop -2) for JSON null.
const VERSION = 0;
const SNAP = 1;
const ENTITY_TYPE = 2;
const ENTITY_ID = 3;
const PERMISSION = 4;
const SUBJECT_TYPE = 5;
const SUBJECT_ID = 6;
const RELATION = 7;
const starts = new Int32Array(8);
const stops = new Int32Array(8);
/** Field numbers beside the string fields: metadata.depth, and a key the scanner skips. */
const DEPTH = 8;
const UNKNOWN = 9;
let depth = Number.NaN;
let metaSeen = false;
let entitySeen = false;
let subjectSeen = false;
/** Start of the last string read by `string()`; its stop is `pos - 1`. */
let strStart = 0;

const TAB = 9;
const LF = 10;
const CR = 13;
const SPACE = 32;
const QUOTE = 34;
const PLUS = 43;
const COMMA = 44;
const MINUS = 45;
const DOT = 46;
const ZERO = 48;
const NINE = 57;
const COLON = 58;
const L_BRACKET = 91;
const BACKSLASH = 92;
const R_BRACKET = 93;
const L_BRACE = 123;
const R_BRACE = 125;

// The loops below keep the cursor in a local and store it once: a module variable is a memory access per character.

function ws(): void {
  const s = src;
  let p = pos;
  while (p < s.length) {
    const c = s.charCodeAt(p);
    if (c === SPACE || c === LF || c === CR || c === TAB) p++;
    else break;
  }
  pos = p;
}

/** A string without escapes at `pos` (after whitespace): sets strStart and moves past the closing quote. */
function string(): boolean {
  const s = src;
  let p = pos;
  if (s.charCodeAt(p) !== QUOTE) return false;
  strStart = ++p;
  while (p < s.length) {
    const c = s.charCodeAt(p++);
    if (c === QUOTE) {
      pos = p;
      return true;
    }
    if (c === BACKSLASH || c < 0x20) break;
  }
  pos = p;
  return false;
}

const digit = (c: number) => c >= ZERO && c <= NINE;

/**
 * A JSON number at `pos`; returns its value, or NaN (not a valid JSON number). An integer of at most 15 digits
 * (exact in a double) is summed from its digits: Number() of a fresh substring is a runtime call in V8, and
 * metadata.depth is in every check body.
 */
function number(): number {
  const start = pos;
  const negative = src.charCodeAt(pos) === MINUS;
  if (negative) pos++;
  const first = src.charCodeAt(pos);
  let value = 0;
  if (first === ZERO) pos++;
  else if (digit(first)) {
    value = first - ZERO;
    for (let c = src.charCodeAt(++pos); digit(c); c = src.charCodeAt(++pos)) value = value * 10 + (c - ZERO);
  } else return Number.NaN;
  let integer = pos - start - (negative ? 1 : 0) <= 15;
  if (src.charCodeAt(pos) === DOT) {
    integer = false;
    if (!digit(src.charCodeAt(++pos))) return Number.NaN;
    while (digit(src.charCodeAt(++pos)));
  }
  const e = src.charCodeAt(pos);
  if (e === 101 || e === 69) {
    integer = false;
    const sign = src.charCodeAt(++pos);
    if (sign === PLUS || sign === MINUS) pos++;
    if (!digit(src.charCodeAt(pos))) return Number.NaN;
    while (digit(src.charCodeAt(++pos)));
  }
  if (!integer) return Number(src.slice(start, pos));
  return negative ? -value : value;
}

function literal(word: string): boolean {
  if (!src.startsWith(word, pos)) return false;
  pos += word.length;
  return true;
}

/** Skips any JSON value (the value of an unknown field), validating it. */
function skipValue(nesting: number): boolean {
  const c = src.charCodeAt(pos);
  if (c === QUOTE) return string();
  if (c === L_BRACE || c === L_BRACKET) {
    if (nesting >= MAX_SKIP_NESTING) return false;
    const close = c === L_BRACE ? R_BRACE : R_BRACKET;
    pos++;
    ws();
    if (src.charCodeAt(pos) === close) {
      pos++;
      return true;
    }
    for (;;) {
      if (c === L_BRACE) {
        if (!string()) return false;
        ws();
        if (src.charCodeAt(pos++) !== COLON) return false;
        ws();
      }
      if (!skipValue(nesting + 1)) return false;
      ws();
      const next = src.charCodeAt(pos++);
      if (next === close) return true;
      if (next !== COMMA) return false;
      ws();
    }
  }
  if (c === 116) return literal("true");
  if (c === 102) return literal("false");
  if (c === 110) return literal("null");
  return !Number.isNaN(number());
}

/** Is the key just read (strStart .. pos-1) `name`? (A loop: startsWith is a builtin call.) */
function keyIs(name: string): boolean {
  if (pos - 1 - strStart !== name.length) return false;
  const s = src;
  const at = strStart;
  for (let i = 0; i < name.length; i++) if (s.charCodeAt(at + i) !== name.charCodeAt(i)) return false;
  return true;
}

/** Reads the value of string field `field` (a string without escapes, or null); false when not one or repeated. */
function stringField(field: number): boolean {
  if (starts[field] !== -1) return false;
  if (src.charCodeAt(pos) === 110) {
    if (!literal("null")) return false;
    starts[field] = stops[field] = -2;
    return true;
  }
  if (!string()) return false;
  starts[field] = strStart;
  stops[field] = pos - 1;
  return true;
}

const TOP_METADATA = 0;
const TOP_ENTITY = 1;
const TOP_SUBJECT = 2;
const TOP_PERMISSION = 3;
const TOP_CONTEXT = 4;
const TOP_ARGUMENTS = 5;
const TOP_OTHER = 6;

const OBJ_METADATA = 0;
const OBJ_ENTITY = 1;
const OBJ_SUBJECT = 2;

/** One of the nested objects; every known key at most once. */
function object(kind: number): boolean {
  if (src.charCodeAt(pos) !== L_BRACE) return false;
  pos++;
  ws();
  if (src.charCodeAt(pos) === R_BRACE) {
    pos++;
    return true;
  }
  for (;;) {
    if (!string()) return false;
    let field = UNKNOWN;
    if (kind === OBJ_METADATA) {
      if (keyIs("schema_version")) field = VERSION;
      else if (keyIs("snap_token")) field = SNAP;
      else if (keyIs("depth")) field = DEPTH;
    } else if (keyIs("type")) field = kind === OBJ_ENTITY ? ENTITY_TYPE : SUBJECT_TYPE;
    else if (keyIs("id")) field = kind === OBJ_ENTITY ? ENTITY_ID : SUBJECT_ID;
    else if (kind === OBJ_SUBJECT && keyIs("relation")) field = RELATION;
    ws();
    if (src.charCodeAt(pos++) !== COLON) return false;
    ws();
    if (field === UNKNOWN) {
      if (!skipValue(0)) return false;
    } else if (field === DEPTH) {
      if (!Number.isNaN(depth)) return false;
      const c = src.charCodeAt(pos);
      if (c !== MINUS && !digit(c)) return false;
      depth = number();
      if (Number.isNaN(depth)) return false;
    } else if (!stringField(field)) return false;
    ws();
    const next = src.charCodeAt(pos++);
    if (next === R_BRACE) return true;
    if (next !== COMMA) return false;
    ws();
  }
}

/** [a-zA-Z_]{1,64} */
function isName(start: number, stop: number): boolean {
  const n = stop - start;
  if (n < 1 || n > 64) return false;
  for (let i = start; i < stop; i++) {
    const c = src.charCodeAt(i);
    if (c === 95) continue; // "_"
    const lower = c | 0x20; // lower case letters (U+007F stays 127, not a letter)
    if (!(lower >= 97 && lower <= 122)) return false;
  }
  return true;
}

/** [a-zA-Z0-9_\-@.:+]{1,128} or "*" */
function isId(start: number, stop: number): boolean {
  const n = stop - start;
  if (n < 1 || n > 128) return false;
  if (n === 1 && src.charCodeAt(start) === 42) return true;
  for (let i = start; i < stop; i++) {
    const c = src.charCodeAt(i);
    if (
      !(
        (c >= 97 && c <= 122) ||
        (c >= 65 && c <= 90) ||
        (c >= ZERO && c <= COLON) || // digits and ":"
        c === 95 || // _
        c === MINUS ||
        c === 64 || // @
        c === DOT ||
        c === PLUS
      )
    )
      return false;
  }
  return true;
}

function reset(text: string): void {
  src = text;
  pos = 0;
  // a loop: TypedArray.prototype.fill is a C++ builtin, costly for 8 elements
  for (let i = 0; i < starts.length; i++) starts[i] = stops[i] = -1;
  depth = Number.NaN;
  metaSeen = entitySeen = subjectSeen = false;
}

/** The top-level object; false for anything the scanner leaves to the general path. */
function topLevel(): boolean {
  ws();
  if (src.charCodeAt(pos++) !== L_BRACE) return false;
  ws();
  let contextSeen = false;
  let argumentsSeen = false;
  for (;;) {
    if (!string()) return false;
    const field = keyIs("metadata")
      ? TOP_METADATA
      : keyIs("entity")
        ? TOP_ENTITY
        : keyIs("subject")
          ? TOP_SUBJECT
          : keyIs("permission")
            ? TOP_PERMISSION
            : keyIs("context")
              ? TOP_CONTEXT
              : keyIs("arguments")
                ? TOP_ARGUMENTS
                : TOP_OTHER;
    ws();
    if (src.charCodeAt(pos++) !== COLON) return false;
    ws();
    if (field === TOP_METADATA) {
      if (metaSeen || !object(OBJ_METADATA)) return false;
      metaSeen = true;
    } else if (field === TOP_ENTITY) {
      if (entitySeen || !object(OBJ_ENTITY)) return false;
      entitySeen = true;
    } else if (field === TOP_SUBJECT) {
      if (subjectSeen || !object(OBJ_SUBJECT)) return false;
      subjectSeen = true;
    } else if (field === TOP_PERMISSION) {
      // a name: null (or any non-string) goes to the general path
      if (src.charCodeAt(pos) !== QUOTE || !stringField(PERMISSION)) return false;
    } else if (field === TOP_CONTEXT) {
      // only a null context: anything else is evaluated with contextual data (the general path)
      if (contextSeen || !literal("null")) return false;
      contextSeen = true;
    } else if (field === TOP_ARGUMENTS) {
      if (argumentsSeen) return false;
      argumentsSeen = true;
      if (src.charCodeAt(pos) === L_BRACKET) {
        pos++;
        ws();
        if (src.charCodeAt(pos++) !== R_BRACKET) return false;
      } else if (!literal("null")) return false;
    } else if (!skipValue(0)) return false;
    ws();
    const next = src.charCodeAt(pos++);
    if (next === R_BRACE) break;
    if (next !== COMMA) return false;
    ws();
  }
  ws();
  return pos === src.length;
}

/** A string field's text: "" for absent or null. */
const text = (field: number) => (starts[field] < 0 ? "" : src.slice(starts[field], stops[field]));
/** Is string field `field` present (not null) and a name / an id? */
const nameField = (field: number) => starts[field] >= 0 && isName(starts[field], stops[field]);
const idField = (field: number) => starts[field] >= 0 && isId(starts[field], stops[field]);

/**
 * The check request of a body text, or undefined when the general path (JSON.parse, then zod) must read it.
 */
export function scanCheckBody(body: string): ScannedCheck | undefined {
  reset(body);
  const result = topLevel() && metaSeen && entitySeen && subjectSeen ? request() : undefined;
  src = ""; // no reference to the body text stays behind
  return result;
}

function request(): ScannedCheck | undefined {
  if (!isCheckDepth(depth)) return undefined;
  if (
    !nameField(ENTITY_TYPE) ||
    !idField(ENTITY_ID) ||
    !nameField(PERMISSION) ||
    !nameField(SUBJECT_TYPE) ||
    !idField(SUBJECT_ID)
  )
    return undefined;
  // the relation may be absent, null or "" (no relation)
  if (stops[RELATION] > starts[RELATION] && !isName(starts[RELATION], stops[RELATION])) return undefined;
  return {
    meta: { schemaVersion: text(VERSION), snapToken: text(SNAP), depth },
    query: {
      entity: { type: text(ENTITY_TYPE), id: text(ENTITY_ID) },
      permission: text(PERMISSION),
      subject: { type: text(SUBJECT_TYPE), id: text(SUBJECT_ID), relation: text(RELATION) },
    },
  };
}
