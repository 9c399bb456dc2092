/** What a call can fail with: the server's answer, an unreachable server, or a timeout. */

/** Base class of every error the client throws (a caller's own abort rethrows the signal's reason instead). */
export class PembaError extends Error {
  /** The request's URL. */
  readonly url: string;
  constructor(message: string, url: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PembaError";
    this.url = url;
  }
}

/** An error answered by the server: Permify's `{code, message, details}` plus the HTTP status. */
export class PembaApiError extends PembaError {
  /** HTTP status, e.g. 400. */
  readonly status: number;
  /** gRPC status code from the body (Permify's `code`), e.g. 3 = INVALID_ARGUMENT, 5 = NOT_FOUND. */
  readonly code: number;
  /** Permify's error name (`ERROR_CODE_SCHEMA_NOT_FOUND`) when the message is one; PGV messages have none. */
  readonly errorCode: string | undefined;
  readonly details: unknown[];
  constructor(
    url: string,
    status: number,
    body: { code?: unknown; message?: unknown; details?: unknown },
    text = "",
  ) {
    const message = typeof body.message === "string" ? body.message : text || `HTTP ${status}`;
    super(message, url);
    this.name = "PembaApiError";
    this.status = status;
    this.code = typeof body.code === "number" ? body.code : status >= 500 ? 13 : 2;
    const name = /^ERROR_CODE_[A-Z_]+/.exec(message);
    this.errorCode = name === null ? undefined : name[0];
    this.details = Array.isArray(body.details) ? body.details : [];
  }
}

/** The server could not be reached (refused, reset, DNS, TLS); `cause` is the runtime's own error. */
export class PembaConnectionError extends PembaError {
  constructor(url: string, cause: unknown) {
    const reason = describeCause(cause);
    super(`could not reach ${url}${reason ? `: ${reason}` : ""}`, url, { cause });
    this.name = "PembaConnectionError";
  }
}

/** No answer (or no complete body) within the call's `timeoutMs`. */
export class PembaTimeoutError extends PembaError {
  readonly timeoutMs: number;
  constructor(url: string, timeoutMs: number) {
    super(`no answer from ${url} within ${timeoutMs} ms`, url);
    this.name = "PembaTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

/** Node's fetch says "fetch failed" and keeps the reason (ECONNREFUSED ...) in `cause`. */
function describeCause(cause: unknown): string {
  const parts: string[] = [];
  let current: unknown = cause;
  for (let i = 0; i < 3 && current instanceof Error; i++) {
    const code = (current as { code?: unknown }).code;
    parts.push(
      typeof code === "string" && !current.message.includes(code)
        ? `${current.message} (${code})`
        : current.message,
    );
    current = current.cause;
  }
  return parts.join(": ");
}
