/** Opaque page cursors: base64url of the last key of the previous page. */
import { PembaError } from "../errors.ts";

// btoa/atob + TextEncoder rather than Buffer: this module also runs in Workers.
export function encodeCursor(key: string | number): string {
  const bytes = new TextEncoder().encode(String(key));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decode(cursor: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new PembaError("ERROR_CODE_INVALID_CONTINUOUS_TOKEN");
  try {
    const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new PembaError("ERROR_CODE_INVALID_CONTINUOUS_TOKEN");
  }
}

export function decodeStringCursor(cursor: string): string {
  const s = decode(cursor);
  if (s === "") throw new PembaError("ERROR_CODE_INVALID_CONTINUOUS_TOKEN");
  return s;
}

export function decodeNumberCursor(cursor: string): number {
  const s = decode(cursor);
  if (!/^\d+$/.test(s)) throw new PembaError("ERROR_CODE_INVALID_CONTINUOUS_TOKEN");
  return Number(s);
}
