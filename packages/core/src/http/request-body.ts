/**
 * Request bodies: read under the size limit (checked while reading), parsed with one JSON.parse. An empty body or
 * `null` is `{}`.
 */
import { PembaError } from "../errors.ts";
import { malformedJsonError } from "./error-response.ts";
import type { ApiRequest } from "./pipeline.ts";

export const requestTooLarge = () =>
  new PembaError("ERROR_CODE_REQUEST_TOO_LARGE", undefined, { grpcCode: 8 });

/** The body of `req` as a JSON object. */
export async function readJsonBody(req: ApiRequest, maxBytes: number): Promise<Record<string, unknown>> {
  return parseJsonText(await req.text(maxBytes));
}

/** Refuses a request whose Content-Length header declares more than `maxBytes`, before its body is read. */
export function assertDeclaredWithinLimit(declared: string | undefined, maxBytes: number): void {
  if (declared !== undefined && Number(declared) > maxBytes) throw requestTooLarge();
}

/**
 * A body stream as UTF-8 text, refused with ERROR_CODE_REQUEST_TOO_LARGE when `declared` (the Content-Length) is
 * over `maxBytes`, or once more than `maxBytes` have arrived (the rest is left unread; the server adapter drains or
 * closes the connection). A leading BOM is kept (and fails JSON parsing, as in Permify).
 */
export async function readStreamText(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  declared?: string,
): Promise<string> {
  assertDeclaredWithinLimit(declared, maxBytes);
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

/** A body text as a JSON object; an empty body or null is `{}`. */
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
      { grpcCode: 3 },
    );
  }
  return body as Record<string, unknown>;
}
