/**
 * AuthZEN ids <-> Pemba ids. AuthZEN allows any string as an id; Permify's rules allow 1 to 128 of
 * `a-z A-Z 0-9 _ - @ . : +` (and `*`, a wildcard). An id that fits those rules and does not start with the prefix
 * below is used as it is; any other id (an API route `/todos/{todoId}`, `*`, an empty or long id, one with spaces)
 * is stored and matched as `b64.` + its UTF-8 bytes in unpadded base64url, which only uses allowed characters.
 * The encoding is reversible: search results are decoded back to the AuthZEN id.
 */
import { idRegex } from "../wire/common.ts";

export const ENCODED_ID_PREFIX = "b64.";
const MAX_ID = 128;

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The Pemba id of an AuthZEN id; undefined when even the encoded id is over 128 characters. */
export function encodeId(id: string): string | undefined {
  if (id !== "*" && idRegex.test(id) && !id.startsWith(ENCODED_ID_PREFIX)) return id;
  const encoded = ENCODED_ID_PREFIX + base64url(new TextEncoder().encode(id));
  return encoded.length > MAX_ID ? undefined : encoded;
}

/** The AuthZEN id of a Pemba id (the inverse of encodeId; an id without the prefix is itself). */
export function decodeId(id: string): string {
  if (!id.startsWith(ENCODED_ID_PREFIX)) return id;
  const b64 = id.slice(ENCODED_ID_PREFIX.length).replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}
