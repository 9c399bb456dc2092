/**
 * The check endpoint's body scanner: reads the common check body straight from its text, without JSON.parse and
 * without building the object tree (JSON.parse internalizes every key and builds five objects per request; under
 * load that was the largest single cost of a check after the socket work).
 *
 * Contract: for every text it accepts, the result equals `parseCheckFast(JSON.parse(text))`, and it accepts no text
 * JSON.parse rejects. It returns undefined for anything it does not handle (escapes in strings, duplicate keys,
 * a context, arguments, deep nesting, invalid JSON, invalid values), and the caller takes the general path, which
 * also produces the error message. A property test compares the two on generated and mutated bodies.
 *
 * The scanner keeps its cursor in module variables: it runs synchronously and never re-enters.
 */
import type { FastCheckRequest } from "./check-fast-path.ts";

/** Largest int32 (Permify's depth is an int32). */
const INT32_MAX = 2147483647;
/** Nesting accepted inside skipped values (unknown fields); deeper goes to the general path. */
const MAX_SKIP_NESTING = 16;

let src = "";
let pos = 0;
let end = 0;

// field slots of one scan: string fields as [start, stop) in src, -1 when absent; -2 = JSON null
let metaSeen = false;
let entitySeen = false;
let subjectSeen = false;
let versionStart = -1;
let versionStop = -1;
let snapStart = -1;
let snapStop = -1;
let depth = Number.NaN;
let entityTypeStart = -1;
let entityTypeStop = -1;
let entityIdStart = -1;
let entityIdStop = -1;
let permissionStart = -1;
let permissionStop = -1;
let subjectTypeStart = -1;
let subjectTypeStop = -1;
let subjectIdStart = -1;
let subjectIdStop = -1;
let relationStart = -1;
let relationStop = -1;
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

function ws(): void {
  while (pos < end) {
    const c = src.charCodeAt(pos);
    if (c === SPACE || c === LF || c === CR || c === TAB) pos++;
    else return;
  }
}

/** A string without escapes at `pos` (after whitespace): sets strStart and moves past the closing quote. */
function string(): boolean {
  if (src.charCodeAt(pos) !== QUOTE) return false;
  strStart = ++pos;
  while (pos < end) {
    const c = src.charCodeAt(pos++);
    if (c === QUOTE) return true;
    if (c === BACKSLASH || c < 0x20) return false;
  }
  return false;
}

const digit = (c: number) => c >= ZERO && c <= NINE;

/** A JSON number at `pos`; returns its value, or NaN (not a valid JSON number). */
function number(): number {
  const start = pos;
  if (src.charCodeAt(pos) === MINUS) pos++;
  const first = src.charCodeAt(pos);
  if (first === ZERO) pos++;
  else if (digit(first)) while (digit(src.charCodeAt(++pos)));
  else return Number.NaN;
  if (src.charCodeAt(pos) === DOT) {
    if (!digit(src.charCodeAt(++pos))) return Number.NaN;
    while (digit(src.charCodeAt(++pos)));
  }
  const e = src.charCodeAt(pos);
  if (e === 101 || e === 69) {
    const sign = src.charCodeAt(++pos);
    if (sign === PLUS || sign === MINUS) pos++;
    if (!digit(src.charCodeAt(pos))) return Number.NaN;
    while (digit(src.charCodeAt(++pos)));
  }
  return Number(src.slice(start, pos));
}

function literal(word: string): boolean {
  if (!src.startsWith(word, pos) || pos + word.length > end) return false;
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

/** Is the key just read (strStart .. pos-1) `name`? */
const keyIs = (name: string) => pos - 1 - strStart === name.length && src.startsWith(name, strStart);

/** A string field's value: a string without escapes (slots set by the caller from strStart/pos) or null (-2). */
function stringOrNull(): number {
  if (src.charCodeAt(pos) === 110) return literal("null") ? -2 : -1;
  return string() ? strStart : -1;
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
    let field = 0; // 1..3: the known field of this object kind; 0: unknown (skipped)
    if (kind === OBJ_METADATA) {
      if (keyIs("schema_version")) field = 1;
      else if (keyIs("snap_token")) field = 2;
      else if (keyIs("depth")) field = 3;
    } else if (keyIs("type")) field = 1;
    else if (keyIs("id")) field = 2;
    else if (kind === OBJ_SUBJECT && keyIs("relation")) field = 3;
    ws();
    if (src.charCodeAt(pos++) !== COLON) return false;
    ws();
    if (field === 0) {
      if (!skipValue(0)) return false;
    } else if (kind === OBJ_METADATA && field === 3) {
      if (!Number.isNaN(depth)) return false;
      const c = src.charCodeAt(pos);
      if (c !== MINUS && !digit(c)) return false;
      depth = number();
      if (Number.isNaN(depth)) return false;
    } else {
      const start = stringOrNull();
      if (start === -1) return false;
      const stop = start === -2 ? -2 : pos - 1;
      if (kind === OBJ_METADATA) {
        if (field === 1) {
          if (versionStart !== -1) return false;
          versionStart = start;
          versionStop = stop;
        } else {
          if (snapStart !== -1) return false;
          snapStart = start;
          snapStop = stop;
        }
      } else if (kind === OBJ_ENTITY) {
        if (field === 1) {
          if (entityTypeStart !== -1) return false;
          entityTypeStart = start;
          entityTypeStop = stop;
        } else {
          if (entityIdStart !== -1) return false;
          entityIdStart = start;
          entityIdStop = stop;
        }
      } else if (field === 1) {
        if (subjectTypeStart !== -1) return false;
        subjectTypeStart = start;
        subjectTypeStop = stop;
      } else if (field === 2) {
        if (subjectIdStart !== -1) return false;
        subjectIdStart = start;
        subjectIdStop = stop;
      } else {
        if (relationStart !== -1) return false;
        relationStart = start;
        relationStop = stop;
      }
    }
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
    const c = src.charCodeAt(i) | 0x20; // lower case letters; "_" (95) becomes 127
    if (!((c >= 97 && c <= 122) || c === 127)) return false;
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
  end = text.length;
  metaSeen = entitySeen = subjectSeen = false;
  versionStart = versionStop = snapStart = snapStop = -1;
  entityTypeStart = entityTypeStop = entityIdStart = entityIdStop = -1;
  permissionStart = permissionStop = -1;
  subjectTypeStart = subjectTypeStop = subjectIdStart = subjectIdStop = relationStart = relationStop = -1;
  depth = Number.NaN;
}

/** The top-level object; false for anything the scanner leaves to the general path. */
function body(): boolean {
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
      if (permissionStart !== -1 || !string()) return false;
      permissionStart = strStart;
      permissionStop = pos - 1;
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
  return pos === end;
}

/** A string slot's value: "" for absent or null. */
const slot = (start: number, stop: number) => (start < 0 ? "" : src.slice(start, stop));

/**
 * The check request of a body text, or undefined when the general path (JSON.parse, then zod) must read it.
 * `text` must already be within the body size limit.
 */
export function scanCheckBody(text: string): FastCheckRequest | undefined {
  reset(text);
  const result = body() && metaSeen && entitySeen && subjectSeen ? request() : undefined;
  src = ""; // no reference to the body text stays behind
  return result;
}

function request(): FastCheckRequest | undefined {
  if (!Number.isInteger(depth) || depth < 3 || depth > INT32_MAX) return undefined;
  if (entityTypeStart < 0 || !isName(entityTypeStart, entityTypeStop)) return undefined;
  if (entityIdStart < 0 || !isId(entityIdStart, entityIdStop)) return undefined;
  if (permissionStart < 0 || !isName(permissionStart, permissionStop)) return undefined;
  if (subjectTypeStart < 0 || !isName(subjectTypeStart, subjectTypeStop)) return undefined;
  if (subjectIdStart < 0 || !isId(subjectIdStart, subjectIdStop)) return undefined;
  if (relationStop > relationStart && !isName(relationStart, relationStop)) return undefined;
  return {
    meta: { schemaVersion: slot(versionStart, versionStop), snapToken: slot(snapStart, snapStop), depth },
    query: {
      entity: {
        type: src.slice(entityTypeStart, entityTypeStop),
        id: src.slice(entityIdStart, entityIdStop),
      },
      permission: src.slice(permissionStart, permissionStop),
      subject: {
        type: src.slice(subjectTypeStart, subjectTypeStop),
        id: src.slice(subjectIdStart, subjectIdStop),
        relation: slot(relationStart, relationStop),
      },
    },
  };
}
