/**
 * The Check RPC's messages read and written straight from and to protobuf bytes, for the native gRPC unary path:
 * the common request (metadata, entity, permission, subject; no context, no arguments) becomes the check request
 * the check route's handler takes, validated by the same rules as the HTTP body scanner (check-body-scanner.ts),
 * without the message objects, proto3 JSON and the body text of the general path. Anything else (a context,
 * arguments, unknown or repeated fields, a value the rules refuse, non-ASCII text) is left to the general path,
 * which also words the errors. A property test holds the two paths to the same reading.
 *
 * base.v1.PermissionCheckRequest: tenant_id = 1, metadata = 2 { schema_version = 1, snap_token = 2, depth = 3 },
 * entity = 3 { type = 1, id = 2 }, permission = 4, subject = 5 { type = 1, id = 2, relation = 3 }, context = 6,
 * arguments = 7. base.v1.PermissionCheckResponse: can = 1 (CheckResult), metadata = 2 { check_count = 1 }.
 */
import type { CheckRequest } from "../http/routes/permission.ts";

/** A check request decoded from its message, with the tenant the call names. */
export interface DecodedCheck {
  tenantId: string;
  check: CheckRequest;
}

const VARINT = 0;
/**
 * The longest text read here: more than any valid name or id (ids: 128), and few enough bytes to pass as the
 * arguments of one call. A longer value is left to the general path.
 */
const MAX_TEXT = 1024;
const LENGTH_DELIMITED = 2;

/** Reads protobuf bytes: a position and, for the field just read, where its value lies. */
class Reader {
  readonly bytes: Uint8Array;
  pos: number;
  readonly end: number;
  /** The last length-delimited value, as [start, stop). */
  start = 0;
  stop = 0;
  /** The last varint value. */
  value = 0;

  constructor(bytes: Uint8Array, pos: number, end: number) {
    this.bytes = bytes;
    this.pos = pos;
    this.end = end;
  }

  /**
   * A varint of at most 35 bits into `value` (tags, lengths, int32 values: an int32's negative value takes 10
   * bytes and is refused here); false when longer or cut off.
   */
  varint(): boolean {
    const b = this.bytes;
    let result = 0;
    let shift = 0;
    for (let i = 0; i < 5; i++) {
      if (this.pos >= this.end) return false;
      const byte = b[this.pos++]!;
      result += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) {
        this.value = result;
        return true;
      }
      shift += 7;
    }
    return false;
  }

  /** A length-delimited value into [start, stop); false when it runs past the end. */
  delimited(): boolean {
    if (!this.varint()) return false;
    const stop = this.pos + this.value;
    if (stop > this.end) return false;
    this.start = this.pos;
    this.stop = stop;
    this.pos = stop;
    return true;
  }

  /**
   * The last length-delimited value as text; undefined unless it is printable ASCII of at most MAX_TEXT bytes. The
   * text is made in one piece from the bytes (not a character at a time, which makes a string per character).
   */
  ascii(): string | undefined {
    const b = this.bytes;
    if (this.stop - this.start > MAX_TEXT) return undefined;
    for (let i = this.start; i < this.stop; i++) {
      const c = b[i]!;
      if (c < 0x20 || c > 0x7e) return undefined;
    }
    return String.fromCharCode.apply(null, b.subarray(this.start, this.stop) as unknown as number[]);
  }
}

/** [a-zA-Z_]{1,64}: entity and subject types, permissions, relations (the scanner's `#isName`). */
function isName(s: string): boolean {
  if (s.length < 1 || s.length > 64) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 95) continue;
    const lower = c | 0x20;
    if (!(lower >= 97 && lower <= 122)) return false;
  }
  return true;
}

/** [a-zA-Z0-9_\-@.:+]{1,128} or "*": entity and subject ids (the scanner's `#isId`). */
function isId(s: string): boolean {
  if (s.length < 1 || s.length > 128) return false;
  if (s === "*") return true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (
      !(
        (c >= 97 && c <= 122) ||
        (c >= 65 && c <= 90) ||
        (c >= 48 && c <= 58) || // digits and ":"
        c === 95 ||
        c === 45 ||
        c === 64 ||
        c === 46 ||
        c === 43
      )
    )
      return false;
  }
  return true;
}

/**
 * The string fields of a nested message by field number (1-based, at most `count`); undefined when a field is not
 * a string of printable ASCII, repeats, or is unknown.
 */
function strings(r: Reader, start: number, stop: number, count: number): string[] | undefined {
  const inner = new Reader(r.bytes, start, stop);
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push("");
  let seen = 0;
  while (inner.pos < stop) {
    if (!inner.varint()) return undefined;
    const field = inner.value >>> 3;
    if ((inner.value & 7) !== LENGTH_DELIMITED || field < 1 || field > count) return undefined;
    const bit = 1 << field;
    if (seen & bit) return undefined;
    seen |= bit;
    if (!inner.delimited()) return undefined;
    const text = inner.ascii();
    if (text === undefined) return undefined;
    out[field - 1] = text;
  }
  return out;
}

/** The check metadata: schema_version, snap_token (strings), depth (an int32 of at least 3). */
function metadata(r: Reader, start: number, stop: number): CheckRequest["meta"] | undefined {
  const inner = new Reader(r.bytes, start, stop);
  let schemaVersion = "";
  let snapToken = "";
  let depth = 0;
  let seen = 0;
  while (inner.pos < stop) {
    if (!inner.varint()) return undefined;
    const field = inner.value >>> 3;
    const wire = inner.value & 7;
    const bit = 1 << field;
    if (field < 1 || field > 3 || seen & bit) return undefined;
    seen |= bit;
    if (field === 3) {
      if (wire !== VARINT || !inner.varint()) return undefined;
      depth = inner.value;
    } else {
      if (wire !== LENGTH_DELIMITED || !inner.delimited()) return undefined;
      const text = inner.ascii();
      if (text === undefined) return undefined;
      if (field === 1) schemaVersion = text;
      else snapToken = text;
    }
  }
  if (depth < 3 || depth > 2147483647) return undefined;
  return { schemaVersion, snapToken, depth };
}

/**
 * The check request of a PermissionCheckRequest's bytes, or undefined when the general path must read them. The
 * tenant id is returned as it is: the request pipeline validates it, as it does a path's.
 */
export function decodeCheckRequest(bytes: Uint8Array): DecodedCheck | undefined {
  const r = new Reader(bytes, 0, bytes.length);
  let tenantId = "";
  let permission = "";
  let meta: CheckRequest["meta"] | undefined;
  let entity: string[] | undefined;
  let subject: string[] | undefined;
  let seen = 0;
  while (r.pos < r.end) {
    if (!r.varint()) return undefined;
    const field = r.value >>> 3;
    // every known field but context (6) and arguments (7) is length-delimited and appears once
    if ((r.value & 7) !== LENGTH_DELIMITED || field < 1 || field > 5) return undefined;
    const bit = 1 << field;
    if (seen & bit) return undefined;
    seen |= bit;
    if (!r.delimited()) return undefined;
    if (field === 1 || field === 4) {
      const text = r.ascii();
      if (text === undefined) return undefined;
      if (field === 1) tenantId = text;
      else permission = text;
    } else if (field === 2) meta = metadata(r, r.start, r.stop);
    else if (field === 3) entity = strings(r, r.start, r.stop, 2);
    else subject = strings(r, r.start, r.stop, 3);
    if ((field === 2 && meta === undefined) || (field === 3 && !entity) || (field === 5 && !subject))
      return undefined;
  }
  if (meta === undefined || entity === undefined || subject === undefined) return undefined;
  const [entityType, entityId] = entity as [string, string];
  const [subjectType, subjectId, relation] = subject as [string, string, string];
  if (!isName(entityType) || !isId(entityId) || !isName(permission)) return undefined;
  if (!isName(subjectType) || !isId(subjectId) || (relation !== "" && !isName(relation))) return undefined;
  return {
    tenantId,
    check: {
      meta,
      query: {
        entity: { type: entityType, id: entityId },
        permission,
        subject: { type: subjectType, id: subjectId, relation },
      },
    },
  };
}

/** CheckResult's numbers by name. */
const CHECK_RESULTS: Record<string, number> = {
  CHECK_RESULT_UNSPECIFIED: 0,
  CHECK_RESULT_ALLOWED: 1,
  CHECK_RESULT_DENIED: 2,
};

/** Writes `value` (< 2^31) as a varint at `at`; returns the position after it. */
function writeVarint(out: Uint8Array, at: number, value: number): number {
  let v = value;
  while (v >= 0x80) {
    out[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[at++] = v;
  return at;
}

const varintSize = (value: number): number =>
  value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;

/**
 * A PermissionCheckResponse as a gRPC length-prefixed message (a zero compression flag, the 4-byte length, the
 * bytes), as @bufbuild/protobuf's toBinary writes it: `can` unless 0, then `metadata` (always present, as the
 * HTTP answer always has it) with `check_count` unless 0. Undefined for a decision that is not a CheckResult or a
 * count that is not a non-negative int32.
 */
export function encodeCheckResponseFrame(can: string, checkCount: number): Uint8Array | undefined {
  const result = CHECK_RESULTS[can];
  if (result === undefined || !Number.isInteger(checkCount) || checkCount < 0 || checkCount > 2147483647)
    return undefined;
  const inner = checkCount === 0 ? 0 : 1 + varintSize(checkCount);
  const size = (result === 0 ? 0 : 2) + 2 + inner;
  const out = new Uint8Array(5 + size);
  out[4] = size; // the message is under 256 bytes: the length's high bytes stay 0
  let at = 5;
  if (result !== 0) {
    out[at++] = 0x08; // field 1, varint
    out[at++] = result;
  }
  out[at++] = 0x12; // field 2, length-delimited
  out[at++] = inner;
  if (checkCount !== 0) {
    out[at++] = 0x08;
    writeVarint(out, at, checkCount);
  }
  return out;
}
