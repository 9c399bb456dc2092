/**
 * Snap tokens: the opaque form of a store transaction id on the wire. Like Permify's memory engine, a token is the
 * base64 of the id as a little-endian uint64 (`"AQAAAAAAAAA="` = 1). A replicated store (D1) appends its
 * replication bookmark after a marker byte, so a read carrying the token is answered by a replica at least as new
 * as the write; tokens without one (every older token) still decode. Only web APIs (atob/btoa), so the Worker can
 * use it.
 */
import { PembaError } from "../errors.ts";
import type { Snap } from "../store/store.ts";

/** Marks a replication bookmark after the 8 snap bytes. */
const BOOKMARK_MARKER = 1;
/** A bookmark is printable ASCII (D1's: hex groups and dashes), at most this long. */
const MAX_BOOKMARK = 256;
const PRINTABLE = /^[\x21-\x7e]+$/;

export interface DecodedSnapToken {
  snap: Snap;
  /** The replication bookmark of the write that answered the token, when the store has one. */
  bookmark?: string;
}

export function encodeSnapToken(snap: Snap, bookmark?: string): string {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(snap), true);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  if (bookmark !== undefined && bookmark !== "") {
    if (bookmark.length > MAX_BOOKMARK || !PRINTABLE.test(bookmark)) {
      throw new PembaError(
        "ERROR_CODE_INTERNAL",
        `unexpected replication bookmark "${bookmark.slice(0, 80)}"`,
      );
    }
    s += String.fromCharCode(BOOKMARK_MARKER) + bookmark;
  }
  return btoa(s);
}

/** Throws ERROR_CODE_INVALID_SNAP_TOKEN for anything that is not base64 of 8 bytes holding a safe integer. */
export function decodeSnapToken(token: string): Snap {
  return decodeSnapTokenWithBookmark(token).snap;
}

/** The snap and, for a replicated store's token, its bookmark. */
export function decodeSnapTokenWithBookmark(token: string): DecodedSnapToken {
  let raw: string;
  try {
    raw = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  }
  if (raw.length < 8) throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  let bookmark: string | undefined;
  if (raw.length > 8) {
    bookmark = raw.slice(9);
    const valid =
      raw.charCodeAt(8) === BOOKMARK_MARKER && bookmark.length <= MAX_BOOKMARK && PRINTABLE.test(bookmark);
    if (!valid) throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  }
  const bytes = new Uint8Array(8);
  for (let i = 0; i < 8; i++) bytes[i] = raw.charCodeAt(i);
  const value = new DataView(bytes.buffer).getBigUint64(0, true);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  return bookmark === undefined ? { snap: Number(value) } : { snap: Number(value), bookmark };
}
