/** Reads a JSON request body under the size limit: one read, one JSON.parse. An empty body is `{}`. */
import type { Context } from "hono";
import { PembaError } from "../errors.ts";
import { malformedJsonError } from "./error-response.ts";

export const requestTooLarge = () =>
  new PembaError("ERROR_CODE_REQUEST_TOO_LARGE", undefined, { grpcCode: 8 });

export async function readJsonBody(c: Context, maxBytes: number): Promise<Record<string, unknown>> {
  return parseJsonBody(await readBodyText(c, maxBytes), maxBytes);
}

/**
 * The body text, refused early when its declared size is over the limit, and while reading as soon as more than the
 * limit has arrived (a chunked body declares no size).
 */
export function readBodyText(c: Context, maxBytes: number): Promise<string> {
  assertDeclaredWithinLimit(c.req.header("content-length"), maxBytes);
  return readStreamText(c.req.raw.body, maxBytes);
}

/**
 * A body stream as UTF-8 text, refused with ERROR_CODE_REQUEST_TOO_LARGE once more than `maxBytes` have arrived
 * (the rest is left unread; the server adapter drains or closes the connection). A leading BOM is kept (and fails
 * JSON parsing, as in Permify).
 */
export async function readStreamText(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<string> {
  if (body === null) return "";
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  let text = "";
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text + decoder.decode();
      bytes += value.byteLength;
      if (bytes > maxBytes) throw requestTooLarge();
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    reader.releaseLock();
  }
}

/** Refuses a request whose Content-Length header declares more than `maxBytes`, before its body is read. */
export function assertDeclaredWithinLimit(declared: string | undefined, maxBytes: number): void {
  if (declared !== undefined && declaredNumber(declared) > maxBytes) throw requestTooLarge();
}

/**
 * Number(text), reading up to 15 digits itself: Number() of a header value (a fresh string) is a runtime call in V8,
 * and every request with a body has a Content-Length.
 */
function declaredNumber(text: string): number {
  if (text.length === 0 || text.length > 15) return Number(text);
  let value = 0;
  for (let i = 0; i < text.length; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return Number(text);
    value = value * 10 + d;
  }
  return value;
}

export function parseJsonBody(text: string, maxBytes: number): Record<string, unknown> {
  assertBodyWithinLimit(text, maxBytes);
  return parseJsonText(text);
}

/** Refuses a body text of more than `maxBytes` UTF-8 bytes. */
export function assertBodyWithinLimit(text: string, maxBytes: number): void {
  // A UTF-16 unit is at most 3 UTF-8 bytes: count bytes only when the length allows more than the limit.
  if (text.length > maxBytes / 3 && new TextEncoder().encode(text).length > maxBytes) throw requestTooLarge();
}

/** A body text (already within the size limit) as a JSON object; an empty body or null is `{}`. */
export function parseJsonText(text: string): Record<string, unknown> {
  if (text === "") return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw malformedJsonError(text, e);
  }
  if (body === null) return {};
  if (typeof body !== "object" || Array.isArray(body)) {
    const first = text.trimStart()[0];
    throw new PembaError(
      "ERROR_CODE_INVALID_ARGUMENT",
      `proto: syntax error (line 1:1): unexpected token ${first}`,
      {
        grpcCode: 3,
      },
    );
  }
  return body as Record<string, unknown>;
}
