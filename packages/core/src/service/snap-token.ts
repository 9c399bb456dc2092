/**
 * Snap tokens: the opaque form of a store transaction id on the wire. Like Permify's memory engine, a token is the
 * base64 of the id as a little-endian uint64 (`"AQAAAAAAAAA="` = 1). Only web APIs (atob/btoa), so the Worker can use it.
 */
import { PembaError } from "../errors.ts";
import type { Snap } from "../store/store.ts";

export function encodeSnapToken(snap: Snap): string {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(snap), true);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/** Throws ERROR_CODE_INVALID_SNAP_TOKEN for anything that is not base64 of 8 bytes holding a safe integer. */
export function decodeSnapToken(token: string): Snap {
  let raw: string;
  try {
    raw = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  }
  if (raw.length !== 8) throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  const bytes = new Uint8Array(8);
  for (let i = 0; i < 8; i++) bytes[i] = raw.charCodeAt(i);
  const value = new DataView(bytes.buffer).getBigUint64(0, true);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new PembaError("ERROR_CODE_INVALID_SNAP_TOKEN");
  return Number(value);
}
