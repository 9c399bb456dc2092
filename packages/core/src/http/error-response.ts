/** Permify's error body `{"code","message","details"}` (google.rpc.Status as grpc-gateway renders it). */
import { isPembaError, PembaError } from "../errors.ts";

export interface ErrorBody {
  code: number;
  message: string;
  details: unknown[];
}

/** The wire status + body for any thrown value; non-Pemba errors become gRPC 13 (Internal). */
export function errorResponseParts(e: unknown): { status: number; body: ErrorBody } {
  if (isPembaError(e)) {
    // Oversize bodies: HTTP 413 (grpc-gateway would say 429 for gRPC's RESOURCE_EXHAUSTED; 413 is what HTTP
    // clients and proxies understand).
    const status = e.code === "ERROR_CODE_REQUEST_TOO_LARGE" ? 413 : e.httpStatus;
    return { status, body: { code: e.grpcCode, message: e.message, details: e.details } };
  }
  const message = e instanceof Error ? e.message : String(e);
  return { status: 500, body: { code: 13, message, details: [] } };
}

export const JSON_HEADERS = { "content-type": "application/json" } as const;
export const NDJSON_HEADERS = { "content-type": "application/x-ndjson" } as const;

export function errorResponse(e: unknown, opts: { stream?: boolean } = {}): Response {
  const { status, body } = errorResponseParts(e);
  // Streaming RPCs wrap the status like grpc-gateway's stream error handler: {"error": {...}}.
  const text = opts.stream ? `${JSON.stringify({ error: body })}\n` : JSON.stringify(body);
  return new Response(text, { status, headers: opts.stream ? NDJSON_HEADERS : JSON_HEADERS });
}

/** Go encoding/json's wording for a body that is not JSON (what grpc-gateway sends). */
export function malformedJsonError(text: string, err: unknown): PembaError {
  const message = err instanceof Error ? err.message : "";
  const match = /position (\d+)/.exec(message);
  let position = match ? Number(match[1]) : -1;
  if (position < 0 && /Unexpected token/.test(message)) {
    const token = /Unexpected token '?(.)'?/.exec(message);
    if (token) position = text.indexOf(token[1]);
  }
  const text2 =
    position < 0 || position >= text.length
      ? "unexpected EOF"
      : `invalid character '${text[position]}' looking for beginning of value`;
  return new PembaError("ERROR_CODE_INVALID_ARGUMENT", text2, { grpcCode: 3 });
}
