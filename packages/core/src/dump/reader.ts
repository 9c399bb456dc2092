/**
 * Reads a dump from its bytes, chunk by chunk, in constant memory: splits lines, checks each against the format
 * (records.ts) and the order (header, optional schema, rows, trailer), and keeps the CRC-32 and the counts the
 * trailer must state. A line that is not a record of the format, a trailer that disagrees, or an end without a
 * trailer fails with DumpFormatError naming the line. Whether a row fits the tenant's schema is the importer's
 * question (import.ts), not the reader's.
 */
import { PembaError } from "../errors.ts";
import { formatRfc3339, parseRfc3339 } from "../expiry.ts";
import type { Attribute, AttributeType, Tuple } from "../model.ts";
import { NAME_PATTERN } from "../wire/common.ts";
import { type Crc32, crcHex, crc32 as jsCrc32 } from "./crc32.ts";
import {
  DUMP_ATTRIBUTE_TYPES,
  DUMP_FORMAT,
  DUMP_ID_PATTERN,
  DUMP_VERSION,
  type DumpHeader,
  type DumpSchemaRecord,
  type DumpTrailer,
} from "./records.ts";

export type DumpLine =
  | { kind: "header"; line: number; header: DumpHeader }
  | { kind: "schema"; line: number; schema: DumpSchemaRecord }
  | { kind: "tuple"; line: number; tuple: Tuple }
  | { kind: "attribute"; line: number; attribute: Attribute }
  | { kind: "trailer"; line: number; trailer: DumpTrailer };

/** The file is not a whole, intact dump; `line` is the 1-based line at fault. */
export class DumpFormatError extends PembaError {
  readonly line: number;
  constructor(line: number, message: string) {
    super("ERROR_CODE_VALIDATION", `line ${line}: ${message}`);
    this.line = line;
  }
}

/** Where a reader starts: after `lines` lines whose bytes had checksum `crc` (a resumed request: http import). */
export interface DumpPosition {
  lines: number;
  crc: number;
  tuples: number;
  attributes: number;
}

const nameRe = new RegExp(NAME_PATTERN);
const idRe = new RegExp(DUMP_ID_PATTERN);
const ATTRIBUTE_TYPES = new Set<string>(DUMP_ATTRIBUTE_TYPES);

/** The unfinished line of the previous chunk and `bytes` as one array, and where its whole lines end (0: none). */
function afterRest(rest: Uint8Array, bytes: Uint8Array): { data: Uint8Array; end: number } {
  let data = bytes;
  if (rest.length > 0) {
    data = new Uint8Array(rest.length + bytes.length);
    data.set(rest);
    data.set(bytes, rest.length);
  }
  return { data, end: data.lastIndexOf(10) + 1 };
}

/** gzip's magic bytes: a dump may be compressed, and the first two bytes say so. */
export const isGzip = (bytes: Uint8Array): boolean =>
  bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;

type Obj = Record<string, unknown>;

function field(o: Obj, key: string, re: RegExp, line: number, optional = false): string | undefined {
  const v = o[key];
  if (v === undefined && optional) return undefined;
  if (typeof v !== "string" || !re.test(v)) {
    throw new DumpFormatError(
      line,
      `${o.type} record: "${key}" is ${v === undefined ? "missing" : `invalid (${JSON.stringify(v)})`}`,
    );
  }
  return v;
}

function expiry(o: Obj, line: number): number | undefined {
  const v = o.expires_at;
  if (v === undefined) return undefined;
  const ms = typeof v === "string" ? parseRfc3339(v) : undefined;
  if (ms === undefined)
    throw new DumpFormatError(line, `${o.type} record: "expires_at" is not an RFC 3339 time`);
  return ms;
}

function onlyKeys(o: Obj, allowed: Set<string>, line: number): void {
  for (const k in o)
    if (!allowed.has(k)) throw new DumpFormatError(line, `${o.type} record: unknown field "${k}"`);
}

const TUPLE_KEYS = new Set([
  "type",
  "entity_type",
  "entity_id",
  "relation",
  "subject_type",
  "subject_id",
  "subject_relation",
  "expires_at",
]);
const ATTRIBUTE_KEYS = new Set([
  "type",
  "entity_type",
  "entity_id",
  "attribute",
  "value_type",
  "value",
  "expires_at",
]);
const HEADER_KEYS = new Set([
  "type",
  "format",
  "version",
  "tenant",
  "schema_version",
  "snap_token",
  "created_at",
]);
const SCHEMA_KEYS = new Set(["type", "version", "text"]);
const TRAILER_KEYS = new Set(["type", "tuples", "attributes", "lines", "crc32"]);

function toTuple(o: Obj, line: number): Tuple {
  onlyKeys(o, TUPLE_KEYS, line);
  const t: Tuple = {
    entity: { type: field(o, "entity_type", nameRe, line)!, id: field(o, "entity_id", idRe, line)! },
    relation: field(o, "relation", nameRe, line)!,
    subject: {
      type: field(o, "subject_type", nameRe, line)!,
      id: field(o, "subject_id", idRe, line)!,
      relation: field(o, "subject_relation", nameRe, line, true) ?? "",
    },
  };
  const expiresAt = expiry(o, line);
  if (expiresAt !== undefined) t.expiresAt = expiresAt;
  return t;
}

const scalar = (v: unknown) => typeof v === "boolean" || typeof v === "string" || typeof v === "number";

function toAttribute(o: Obj, line: number): Attribute {
  onlyKeys(o, ATTRIBUTE_KEYS, line);
  const valueType = o.value_type;
  if (typeof valueType !== "string" || !ATTRIBUTE_TYPES.has(valueType))
    throw new DumpFormatError(
      line,
      `attribute record: "value_type" is invalid (${JSON.stringify(valueType)})`,
    );
  const value = o.value;
  if (!(scalar(value) || (Array.isArray(value) && value.every(scalar))))
    throw new DumpFormatError(
      line,
      `attribute record: "value" is ${value === undefined ? "missing" : "not a boolean, string, number or array of them"}`,
    );
  const a: Attribute = {
    entity: { type: field(o, "entity_type", nameRe, line)!, id: field(o, "entity_id", idRe, line)! },
    attribute: field(o, "attribute", nameRe, line)!,
    value: { type: valueType as AttributeType, data: value as Attribute["value"]["data"] },
  };
  const expiresAt = expiry(o, line);
  if (expiresAt !== undefined) a.expiresAt = expiresAt;
  return a;
}

const count = (v: unknown) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

export class DumpReader {
  readonly #crc32: Crc32;
  readonly #utf8 = new TextDecoder();
  #rest: Uint8Array = new Uint8Array(0);
  #crc: number;
  #lines: number;
  #tuples: number;
  #attributes: number;
  #trailer: DumpTrailer | undefined;
  #sawSchema = false;

  constructor(opts: { crc32?: Crc32; from?: DumpPosition } = {}) {
    this.#crc32 = opts.crc32 ?? jsCrc32;
    this.#crc = opts.from?.crc ?? 0;
    this.#lines = opts.from?.lines ?? 0;
    this.#tuples = opts.from?.tuples ?? 0;
    this.#attributes = opts.from?.attributes ?? 0;
  }

  /** Lines read so far, the checksum of their bytes and the rows among them: where a later reader may resume. */
  get position(): DumpPosition {
    return { lines: this.#lines, crc: this.#crc, tuples: this.#tuples, attributes: this.#attributes };
  }

  get done(): boolean {
    return this.#trailer !== undefined;
  }

  /** The records of the whole lines in `bytes` (with what was left of the previous chunk). */
  push(bytes: Uint8Array): DumpLine[] {
    const { data, end } = afterRest(this.#rest, bytes);
    if (end === 0) {
      this.#rest = data.slice();
      return [];
    }
    this.#rest = data.slice(end);
    const region = data.subarray(0, end);
    const texts = this.#utf8.decode(region).split("\n");
    texts.pop(); // after the last newline
    const out: DumpLine[] = [];
    // the header (line 1) is outside the checksum
    const from = this.#lines === 0 ? region.indexOf(10) + 1 : 0;
    let trailerAt = -1;
    for (let i = 0; i < texts.length; i++) {
      const record = this.#record(texts[i]!, this.#lines + 1);
      this.#lines++;
      if (record.kind === "trailer") trailerAt = i;
      out.push(record);
    }
    if (trailerAt === -1) this.#crc = this.#crc32(region.subarray(from), this.#crc);
    else {
      // the trailer is the region's last line (#record refuses anything after it): the checksum stops before it
      const start = region.lastIndexOf(10, region.length - 2) + 1;
      this.#crc = this.#crc32(region.subarray(from, Math.max(from, start)), this.#crc);
      this.#checkTrailer(this.#lines);
    }
    return out;
  }

  /** Checks that the dump ended with its trailer and nothing after it. */
  end(): void {
    if (this.#rest.length > 0) {
      const line = this.#lines + 1;
      throw new DumpFormatError(line, "the file ends inside this line: the dump is truncated");
    }
    if (this.#trailer === undefined) {
      const line = this.#lines;
      throw new DumpFormatError(
        Math.max(line, 1),
        line === 0
          ? "the file is empty"
          : "the file ends without its trailer: the dump is truncated after this line",
      );
    }
  }

  #record(text: string, line: number): DumpLine {
    if (this.#trailer !== undefined) throw new DumpFormatError(line, "a line after the trailer");
    let o: Obj;
    try {
      o = JSON.parse(text) as Obj;
    } catch {
      throw new DumpFormatError(line, "not a JSON line: the file is corrupt");
    }
    if (o === null || typeof o !== "object" || Array.isArray(o))
      throw new DumpFormatError(line, "not a JSON object: the file is corrupt");
    const type = o.type;
    if (line === 1 && type !== "header")
      throw new DumpFormatError(line, `a dump starts with its header, not "${String(type)}"`);
    switch (type) {
      case "tuple":
        this.#tuples++;
        return { kind: "tuple", line, tuple: toTuple(o, line) };
      case "attribute":
        this.#attributes++;
        return { kind: "attribute", line, attribute: toAttribute(o, line) };
      case "header":
        return { kind: "header", line, header: this.#header(o, line) };
      case "schema":
        if (line !== 2 || this.#sawSchema)
          throw new DumpFormatError(line, "the schema record belongs on line 2");
        this.#sawSchema = true;
        onlyKeys(o, SCHEMA_KEYS, line);
        if (typeof o.version !== "string" || o.version === "" || typeof o.text !== "string")
          throw new DumpFormatError(line, 'schema record: needs "version" and "text" strings');
        return { kind: "schema", line, schema: { type: "schema", version: o.version, text: o.text } };
      case "trailer":
        onlyKeys(o, TRAILER_KEYS, line);
        if (!count(o.tuples) || !count(o.attributes) || !count(o.lines) || typeof o.crc32 !== "string")
          throw new DumpFormatError(
            line,
            'trailer: needs counts "tuples", "attributes", "lines" and a "crc32"',
          );
        this.#trailer = o as DumpTrailer;
        return { kind: "trailer", line, trailer: this.#trailer };
      default:
        throw new DumpFormatError(line, `unknown record type ${JSON.stringify(type)}`);
    }
  }

  #header(o: Obj, line: number): DumpHeader {
    if (line !== 1) throw new DumpFormatError(line, "a header after line 1");
    onlyKeys(o, HEADER_KEYS, line);
    if (o.format !== DUMP_FORMAT) throw new DumpFormatError(line, `not a ${DUMP_FORMAT} file`);
    if (o.version !== DUMP_VERSION)
      throw new DumpFormatError(
        line,
        `format version ${String(o.version)}; this Pemba reads version ${DUMP_VERSION}`,
      );
    for (const k of ["tenant", "schema_version", "snap_token", "created_at"])
      if (typeof o[k] !== "string") throw new DumpFormatError(line, `header: "${k}" must be a string`);
    if (o.tenant === "" || parseRfc3339(o.created_at as string) === undefined)
      throw new DumpFormatError(line, 'header: needs a "tenant" and an RFC 3339 "created_at"');
    return o as DumpHeader;
  }

  #checkTrailer(line: number): void {
    const t = this.#trailer!;
    const before = line - 1;
    if (t.lines !== before)
      throw new DumpFormatError(
        line,
        `the trailer counts ${t.lines} lines before it, the file has ${before}: lines are missing or added`,
      );
    if (t.tuples !== this.#tuples || t.attributes !== this.#attributes)
      throw new DumpFormatError(
        line,
        `the trailer counts ${t.tuples} tuples and ${t.attributes} attributes, the file has ${this.#tuples} and ${this.#attributes}`,
      );
    if (t.crc32 !== crcHex(this.#crc))
      throw new DumpFormatError(
        line,
        `checksum mismatch (trailer ${t.crc32}, lines ${crcHex(this.#crc)}): the file was altered`,
      );
  }
}

/** The dump's wire form of a row expiry (for messages). */
export const expiryText = (ms: number | undefined): string =>
  ms === undefined ? "never" : formatRfc3339(ms);

/**
 * A dump's frame only, without reading its records: the line count, the CRC-32 of every line before the last, and
 * the last line as the trailer that must state both. Runs at disk speed, so an import checks a whole file this way
 * before writing anything; when the checksum disagrees, a DumpReader over the same bytes names the first line at
 * fault (or the trailer, when every line is a record).
 */
export class DumpFrameCheck {
  readonly #crc32: Crc32;
  #rest: Uint8Array = new Uint8Array(0);
  #held: Uint8Array = new Uint8Array(0);
  #crc = 0;
  #lines = 0;

  constructor(opts: { crc32?: Crc32 } = {}) {
    this.#crc32 = opts.crc32 ?? jsCrc32;
  }

  push(bytes: Uint8Array): void {
    const { data, end } = afterRest(this.#rest, bytes);
    if (end === 0) {
      this.#rest = data.slice();
      return;
    }
    // the header (line 1) is outside the checksum
    const from = this.#lines === 0 ? data.indexOf(10) + 1 : 0;
    for (let i = data.indexOf(10); i !== -1 && i < end; i = data.indexOf(10, i + 1)) this.#lines++;
    const lastStart = data.lastIndexOf(10, end - 2) + 1;
    this.#crc = this.#crc32(this.#held, this.#crc);
    this.#crc = this.#crc32(data.subarray(from, Math.max(from, lastStart)), this.#crc);
    if (lastStart < from) {
      this.#held = new Uint8Array(0); // the header alone so far: nothing held
      this.#rest = data.slice(end);
      return;
    }
    this.#held = data.slice(lastStart, end);
    this.#rest = data.slice(end);
  }

  /** The trailer, once the frame holds; DumpFormatError otherwise (`checksum` true: only the checksum failed). */
  end(): DumpTrailer {
    if (this.#rest.length > 0)
      throw new DumpFormatError(this.#lines + 1, "the file ends inside this line: the dump is truncated");
    if (this.#lines === 0) throw new DumpFormatError(1, "the file is empty");
    let t: Partial<DumpTrailer> | undefined;
    try {
      t = JSON.parse(new TextDecoder().decode(this.#held)) as Partial<DumpTrailer>;
    } catch {
      t = undefined;
    }
    if (t?.type !== "trailer")
      throw new DumpFormatError(
        this.#lines,
        "the file ends without its trailer: the dump is truncated after this line",
      );
    if (t.lines !== this.#lines - 1)
      throw new DumpFormatError(
        this.#lines,
        `the trailer counts ${t.lines} lines before it, the file has ${this.#lines - 1}: lines are missing or added`,
      );
    if (t.crc32 !== crcHex(this.#crc))
      throw new DumpChecksumError(this.#lines, t.crc32 ?? "", crcHex(this.#crc));
    return t as DumpTrailer;
  }
}

export class DumpChecksumError extends DumpFormatError {
  constructor(line: number, trailer: string, actual: string) {
    super(line, `checksum mismatch (trailer ${trailer}, lines ${actual}): the file was altered`);
  }
}
