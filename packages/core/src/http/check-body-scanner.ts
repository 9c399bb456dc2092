/**
 * A fast path of the check endpoint: reads the common check body straight from its text, without JSON.parse and
 * without zod (the two were most of the validation cost of a check).
 *
 * Contract: zod's wire schema (`PermissionCheckRequestSchema`) is the definition of a valid request. For every
 * text the scanner accepts, JSON.parse accepts it and zod's parse gives the same request (a fast-check property
 * test compares the two on generated and mutated bodies). It returns undefined for anything it does not handle
 * (escapes in strings, duplicate keys, a context, arguments, numbers as strings, deep nesting, invalid JSON,
 * invalid values), and the caller takes the general path: JSON.parse, then zod, which also words the errors.
 *
 * Each call scans with a scanner of its own (the cursor and the fields found are its state): nothing outlives it.
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

// The string fields of one scan, as [start, stop) in the text: start -1 when absent, -2 (and stop -2) for JSON null.
const VERSION = 0;
const SNAP = 1;
const ENTITY_TYPE = 2;
const ENTITY_ID = 3;
const PERMISSION = 4;
const SUBJECT_TYPE = 5;
const SUBJECT_ID = 6;
const RELATION = 7;
/** Field numbers beside the string fields: metadata.depth, and a key the scanner skips. */
const DEPTH = 8;
const UNKNOWN = 9;

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

const digit = (c: number) => c >= ZERO && c <= NINE;

/**
 * The check request of a body text, or undefined when the general path (JSON.parse, then zod) must read it.
 */
export function scanCheckBody(body: string): ScannedCheck | undefined {
  return new CheckBodyScanner(body).scan();
}

/** One scan of one body text. */
class CheckBodyScanner {
  readonly #src: string;
  #pos = 0;
  /** Start of the last string read by `string()`; its stop is `pos - 1`. */
  #strStart = 0;
  readonly #starts = [-1, -1, -1, -1, -1, -1, -1, -1];
  readonly #stops = [-1, -1, -1, -1, -1, -1, -1, -1];
  #depth = Number.NaN;
  #metaSeen = false;
  #entitySeen = false;
  #subjectSeen = false;

  constructor(text: string) {
    this.#src = text;
  }

  scan(): ScannedCheck | undefined {
    return this.#topLevel() && this.#metaSeen && this.#entitySeen && this.#subjectSeen
      ? this.#request()
      : undefined;
  }

  // The loops below keep the cursor in a local and store it once: a field is a memory access per character.

  #ws(): void {
    const s = this.#src;
    let p = this.#pos;
    while (p < s.length) {
      const c = s.charCodeAt(p);
      if (c === SPACE || c === LF || c === CR || c === TAB) p++;
      else break;
    }
    this.#pos = p;
  }

  /** A string without escapes at `pos` (after whitespace): sets strStart and moves past the closing quote. */
  #string(): boolean {
    const s = this.#src;
    let p = this.#pos;
    if (s.charCodeAt(p) !== QUOTE) return false;
    this.#strStart = ++p;
    while (p < s.length) {
      const c = s.charCodeAt(p++);
      if (c === QUOTE) {
        this.#pos = p;
        return true;
      }
      if (c === BACKSLASH || c < 0x20) break;
    }
    this.#pos = p;
    return false;
  }

  /**
   * A JSON number at `pos`; returns its value, or NaN (not a valid JSON number). An integer of at most 15 digits
   * (exact in a double) is summed from its digits: Number() of a fresh substring is a runtime call in V8, and
   * metadata.depth is in every check body.
   */
  #number(): number {
    const src = this.#src;
    let pos = this.#pos;
    const start = pos;
    const negative = src.charCodeAt(pos) === MINUS;
    if (negative) pos++;
    const first = src.charCodeAt(pos);
    let value = 0;
    if (first === ZERO) pos++;
    else if (digit(first)) {
      value = first - ZERO;
      for (let c = src.charCodeAt(++pos); digit(c); c = src.charCodeAt(++pos))
        value = value * 10 + (c - ZERO);
    } else {
      this.#pos = pos;
      return Number.NaN;
    }
    let integer = pos - start - (negative ? 1 : 0) <= 15;
    if (src.charCodeAt(pos) === DOT) {
      integer = false;
      if (!digit(src.charCodeAt(++pos))) {
        this.#pos = pos;
        return Number.NaN;
      }
      while (digit(src.charCodeAt(++pos)));
    }
    const e = src.charCodeAt(pos);
    if (e === 101 || e === 69) {
      integer = false;
      const sign = src.charCodeAt(++pos);
      if (sign === PLUS || sign === MINUS) pos++;
      if (!digit(src.charCodeAt(pos))) {
        this.#pos = pos;
        return Number.NaN;
      }
      while (digit(src.charCodeAt(++pos)));
    }
    this.#pos = pos;
    if (!integer) return Number(src.slice(start, pos));
    return negative ? -value : value;
  }

  #literal(word: string): boolean {
    if (!this.#src.startsWith(word, this.#pos)) return false;
    this.#pos += word.length;
    return true;
  }

  /** Skips any JSON value (the value of an unknown field), validating it. */
  #skipValue(nesting: number): boolean {
    const src = this.#src;
    const c = src.charCodeAt(this.#pos);
    if (c === QUOTE) return this.#string();
    if (c === L_BRACE || c === L_BRACKET) {
      if (nesting >= MAX_SKIP_NESTING) return false;
      const close = c === L_BRACE ? R_BRACE : R_BRACKET;
      this.#pos++;
      this.#ws();
      if (src.charCodeAt(this.#pos) === close) {
        this.#pos++;
        return true;
      }
      for (;;) {
        if (c === L_BRACE) {
          if (!this.#string()) return false;
          this.#ws();
          if (src.charCodeAt(this.#pos++) !== COLON) return false;
          this.#ws();
        }
        if (!this.#skipValue(nesting + 1)) return false;
        this.#ws();
        const next = src.charCodeAt(this.#pos++);
        if (next === close) return true;
        if (next !== COMMA) return false;
        this.#ws();
      }
    }
    if (c === 116) return this.#literal("true");
    if (c === 102) return this.#literal("false");
    if (c === 110) return this.#literal("null");
    return !Number.isNaN(this.#number());
  }

  /** Is the key just read (strStart .. pos-1) `name`? (A loop: startsWith is a builtin call.) */
  #keyIs(name: string): boolean {
    const at = this.#strStart;
    if (this.#pos - 1 - at !== name.length) return false;
    const s = this.#src;
    for (let i = 0; i < name.length; i++) if (s.charCodeAt(at + i) !== name.charCodeAt(i)) return false;
    return true;
  }

  /** Reads the value of string field `field` (a string without escapes, or null); false when not one or repeated. */
  #stringField(field: number): boolean {
    const starts = this.#starts;
    const stops = this.#stops;
    if (starts[field] !== -1) return false;
    if (this.#src.charCodeAt(this.#pos) === 110) {
      if (!this.#literal("null")) return false;
      starts[field] = stops[field] = -2;
      return true;
    }
    if (!this.#string()) return false;
    starts[field] = this.#strStart;
    stops[field] = this.#pos - 1;
    return true;
  }

  /** One of the nested objects; every known key at most once. */
  #object(kind: number): boolean {
    const src = this.#src;
    if (src.charCodeAt(this.#pos) !== L_BRACE) return false;
    this.#pos++;
    this.#ws();
    if (src.charCodeAt(this.#pos) === R_BRACE) {
      this.#pos++;
      return true;
    }
    for (;;) {
      if (!this.#string()) return false;
      let field = UNKNOWN;
      if (kind === OBJ_METADATA) {
        if (this.#keyIs("schema_version")) field = VERSION;
        else if (this.#keyIs("snap_token")) field = SNAP;
        else if (this.#keyIs("depth")) field = DEPTH;
      } else if (this.#keyIs("type")) field = kind === OBJ_ENTITY ? ENTITY_TYPE : SUBJECT_TYPE;
      else if (this.#keyIs("id")) field = kind === OBJ_ENTITY ? ENTITY_ID : SUBJECT_ID;
      else if (kind === OBJ_SUBJECT && this.#keyIs("relation")) field = RELATION;
      this.#ws();
      if (src.charCodeAt(this.#pos++) !== COLON) return false;
      this.#ws();
      if (field === UNKNOWN) {
        if (!this.#skipValue(0)) return false;
      } else if (field === DEPTH) {
        if (!Number.isNaN(this.#depth)) return false;
        const c = src.charCodeAt(this.#pos);
        if (c !== MINUS && !digit(c)) return false;
        this.#depth = this.#number();
        if (Number.isNaN(this.#depth)) return false;
      } else if (!this.#stringField(field)) return false;
      this.#ws();
      const next = src.charCodeAt(this.#pos++);
      if (next === R_BRACE) return true;
      if (next !== COMMA) return false;
      this.#ws();
    }
  }

  /** [a-zA-Z_]{1,64} */
  #isName(start: number, stop: number): boolean {
    const n = stop - start;
    if (n < 1 || n > 64) return false;
    const src = this.#src;
    for (let i = start; i < stop; i++) {
      const c = src.charCodeAt(i);
      if (c === 95) continue; // "_"
      const lower = c | 0x20; // lower case letters (U+007F stays 127, not a letter)
      if (!(lower >= 97 && lower <= 122)) return false;
    }
    return true;
  }

  /** [a-zA-Z0-9_\-@.:+]{1,128} or "*" */
  #isId(start: number, stop: number): boolean {
    const n = stop - start;
    if (n < 1 || n > 128) return false;
    const src = this.#src;
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

  /** The top-level object; false for anything the scanner leaves to the general path. */
  #topLevel(): boolean {
    const src = this.#src;
    this.#ws();
    if (src.charCodeAt(this.#pos++) !== L_BRACE) return false;
    this.#ws();
    let contextSeen = false;
    let argumentsSeen = false;
    for (;;) {
      if (!this.#string()) return false;
      const field = this.#keyIs("metadata")
        ? TOP_METADATA
        : this.#keyIs("entity")
          ? TOP_ENTITY
          : this.#keyIs("subject")
            ? TOP_SUBJECT
            : this.#keyIs("permission")
              ? TOP_PERMISSION
              : this.#keyIs("context")
                ? TOP_CONTEXT
                : this.#keyIs("arguments")
                  ? TOP_ARGUMENTS
                  : TOP_OTHER;
      this.#ws();
      if (src.charCodeAt(this.#pos++) !== COLON) return false;
      this.#ws();
      if (field === TOP_METADATA) {
        if (this.#metaSeen || !this.#object(OBJ_METADATA)) return false;
        this.#metaSeen = true;
      } else if (field === TOP_ENTITY) {
        if (this.#entitySeen || !this.#object(OBJ_ENTITY)) return false;
        this.#entitySeen = true;
      } else if (field === TOP_SUBJECT) {
        if (this.#subjectSeen || !this.#object(OBJ_SUBJECT)) return false;
        this.#subjectSeen = true;
      } else if (field === TOP_PERMISSION) {
        // a name: null (or any non-string) goes to the general path
        if (src.charCodeAt(this.#pos) !== QUOTE || !this.#stringField(PERMISSION)) return false;
      } else if (field === TOP_CONTEXT) {
        // only a null context: anything else is evaluated with contextual data (the general path)
        if (contextSeen || !this.#literal("null")) return false;
        contextSeen = true;
      } else if (field === TOP_ARGUMENTS) {
        if (argumentsSeen) return false;
        argumentsSeen = true;
        if (src.charCodeAt(this.#pos) === L_BRACKET) {
          this.#pos++;
          this.#ws();
          if (src.charCodeAt(this.#pos++) !== R_BRACKET) return false;
        } else if (!this.#literal("null")) return false;
      } else if (!this.#skipValue(0)) return false;
      this.#ws();
      const next = src.charCodeAt(this.#pos++);
      if (next === R_BRACE) break;
      if (next !== COMMA) return false;
      this.#ws();
    }
    this.#ws();
    return this.#pos === src.length;
  }

  /** A string field's text: "" for absent or null. */
  #text(field: number): string {
    const start = this.#starts[field];
    return start < 0 ? "" : this.#src.slice(start, this.#stops[field]);
  }

  /** Is string field `field` present (not null) and a name? */
  #nameField(field: number): boolean {
    return this.#starts[field] >= 0 && this.#isName(this.#starts[field], this.#stops[field]);
  }

  /** Is string field `field` present (not null) and an id? */
  #idField(field: number): boolean {
    return this.#starts[field] >= 0 && this.#isId(this.#starts[field], this.#stops[field]);
  }

  #request(): ScannedCheck | undefined {
    const depth = this.#depth;
    if (!isCheckDepth(depth)) return undefined;
    if (
      !this.#nameField(ENTITY_TYPE) ||
      !this.#idField(ENTITY_ID) ||
      !this.#nameField(PERMISSION) ||
      !this.#nameField(SUBJECT_TYPE) ||
      !this.#idField(SUBJECT_ID)
    )
      return undefined;
    // the relation may be absent, null or "" (no relation)
    const starts = this.#starts;
    const stops = this.#stops;
    if (stops[RELATION] > starts[RELATION] && !this.#isName(starts[RELATION], stops[RELATION]))
      return undefined;
    return {
      meta: { schemaVersion: this.#text(VERSION), snapToken: this.#text(SNAP), depth },
      query: {
        entity: { type: this.#text(ENTITY_TYPE), id: this.#text(ENTITY_ID) },
        permission: this.#text(PERMISSION),
        subject: {
          type: this.#text(SUBJECT_TYPE),
          id: this.#text(SUBJECT_ID),
          relation: this.#text(RELATION),
        },
      },
    };
  }
}
