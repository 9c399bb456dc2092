/**
 * Snap tokens: the opaque form of a store transaction id on the wire. Like Permify's memory engine, a token is the
 * base64 of the id as a little-endian uint64 (`"AQAAAAAAAAA="` = 1). Two optional parts may follow, each a marker
 * byte and printable ASCII: a replicated store's (D1) replication bookmark (marker 1), so a read carrying the token
 * is answered by a replica at least as new as the write; and, when tenants live on several databases (the Worker's
 * D1 bindings), the name of the database the snap belongs to (marker 2), for every database but the first. A token
 * of one database therefore keeps Permify's form (plus a bookmark on D1), and tokens without a part (every older
 * token) still decode. Only web APIs (atob/btoa), so the Worker can use it.
 */
import { PembaError } from "../errors.ts";
import type { Snap } from "../store/store.ts";

/** Marks a replication bookmark after the 8 snap bytes. */
const BOOKMARK_MARKER = 1;
/** Marks the name of the database the snap belongs to (after the bookmark, if any). */
const DATABASE_MARKER = 2;
/** A bookmark (D1's: hex groups and dashes) or a database name is printable ASCII, at most this long. */
const MAX_PART = 256;
const PRINTABLE = /^[\x21-\x7e]+$/;

export interface DecodedSnapToken {
  snap: Snap;
  /** The replication bookmark of the write that answered the token, when the store has one. */
  bookmark?: string;
  /** The database the snap belongs to; undefined for the first (or only) database. */
  database?: string;
}

export function encodeSnapToken(snap: Snap, bookmark?: string, database?: string): string {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(snap), true);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  if (bookmark !== undefined && bookmark !== "") {
    if (!validPart(bookmark)) {
      throw new PembaError(
        "ERROR_CODE_INTERNAL",
        `unexpected replication bookmark "${bookmark.slice(0, 80)}"`,
      );
    }
    s += String.fromCharCode(BOOKMARK_MARKER) + bookmark;
  }
  if (database !== undefined) {
    if (!validPart(database)) {
      throw new PembaError("ERROR_CODE_INTERNAL", `unexpected database name "${database.slice(0, 80)}"`);
    }
    s += String.fromCharCode(DATABASE_MARKER) + database;
  }
  return btoa(s);
}

function validPart(text: string): boolean {
  return text.length <= MAX_PART && PRINTABLE.test(text);
}

/** Throws ERROR_CODE_INVALID_SNAP_TOKEN for anything that is not base64 of 8 bytes holding a safe integer. */
export function decodeSnapToken(token: string): Snap {
  return decodeSnapTokenWithBookmark(token).snap;
}

/** The snap and, for a replicated store's token, its bookmark; for a database other than the first, its name. */
export function decodeSnapTokenWithBookmark(token: string): DecodedSnapToken {
  let raw: string;
  try {
    raw = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  }
  if (raw.length < 8) throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  const bytes = new Uint8Array(8);
  for (let i = 0; i < 8; i++) bytes[i] = raw.charCodeAt(i);
  const value = new DataView(bytes.buffer).getBigUint64(0, true);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  const decoded: DecodedSnapToken = { snap: Number(value) };
  // the optional parts, in marker order: \x01 bookmark, then \x02 database
  let rest = raw.slice(8);
  for (const [marker, key] of [
    [BOOKMARK_MARKER, "bookmark"],
    [DATABASE_MARKER, "database"],
  ] as const) {
    if (rest.charCodeAt(0) !== marker) continue;
    const end = rest.indexOf(String.fromCharCode(DATABASE_MARKER), 1);
    const part = marker === BOOKMARK_MARKER && end > 0 ? rest.slice(1, end) : rest.slice(1);
    if (!validPart(part)) throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
    decoded[key] = part;
    rest = rest.slice(1 + part.length);
  }
  if (rest !== "") throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  return decoded;
}
