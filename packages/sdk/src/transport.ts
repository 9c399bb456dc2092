/**
 * One HTTP call to the server: JSON in and out, a timeout per attempt (AbortSignal), retries with exponential
 * backoff and full jitter, and every failure turned into a typed error that names the URL.
 */
import { PembaApiError, PembaConnectionError, PembaError, PembaTimeoutError } from "./errors.ts";

export interface RetryOptions {
  /** Extra attempts after the first (default 2). 0 turns retries off. */
  retries?: number;
  /** First backoff ceiling in ms (default 100); it doubles per attempt, and each wait is random below it. */
  baseDelayMs?: number;
  /** Largest wait in ms (default 2000); also caps a `Retry-After` header. */
  maxDelayMs?: number;
  /** Retry writes too (default false: a write whose answer was lost may have been applied). */
  writes?: boolean;
}

/** Per call: the last argument of every client method. */
export interface CallOptions {
  /** Cancels the call (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Overrides the client's `timeoutMs` for this call. */
  timeoutMs?: number;
  /** Forces retries on (e.g. for an idempotent write) or off for this call. */
  retry?: boolean;
}

export interface TransportOptions {
  baseUrl: string;
  token?: string;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  timeoutMs?: number;
  retry?: RetryOptions;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * Worth another attempt: the server was unreachable, or answered 429 or 5xx. Not 501 (the method does not exist)
 * and not gRPC code 2 (UNKNOWN: Permify's answer to a missing bearer token), which would come back the same.
 */
export function isRetryable(error: unknown): boolean {
  if (error instanceof PembaConnectionError || error instanceof PembaTimeoutError) return true;
  if (!(error instanceof PembaApiError)) return false;
  if (error.status === 429) return true;
  return error.status >= 500 && error.status !== 501 && error.code !== 2;
}

export class Transport {
  readonly baseUrl: string;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #retryWrites: boolean;

  constructor(opts: TransportOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.#headers = { "content-type": "application/json", ...opts.headers };
    if (opts.token) this.#headers.authorization = `Bearer ${opts.token}`;
    // Called through a closure: browsers and Workers throw "Illegal invocation" for a detached `fetch`.
    const f = opts.fetch;
    this.#fetch = f ?? ((input, init) => fetch(input, init));
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#retries = Math.max(0, opts.retry?.retries ?? 2);
    this.#baseDelayMs = opts.retry?.baseDelayMs ?? 100;
    this.#maxDelayMs = opts.retry?.maxDelayMs ?? 2000;
    this.#retryWrites = opts.retry?.writes ?? false;
  }

  /** A JSON call; `idempotent` calls (reads) retry by default, writes only when the client or call says so. */
  async json<T>(
    method: string,
    path: string,
    body: unknown,
    idempotent: boolean,
    call: CallOptions = {},
  ): Promise<T> {
    const attempts = (call.retry ?? (idempotent || this.#retryWrites)) ? this.#retries + 1 : 1;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#attempt(method, path, body, call, async (res, url) => {
          const text = await res.text();
          if (!res.ok) throw apiError(url, res.status, text, res.headers);
          return (text === "" ? {} : JSON.parse(text)) as T;
        });
      } catch (error) {
        if (attempt + 1 >= attempts || !isRetryable(error)) throw error;
        await sleep(this.#backoff(attempt, error), call.signal);
      }
    }
  }

  /**
   * A streaming call (NDJSON): resolves once the headers are in (the timeout covers only that part); the caller's
   * signal still cancels the body. Not retried: lines already handed out cannot be taken back.
   */
  stream(method: string, path: string, body: unknown, call: CallOptions = {}): Promise<Response> {
    return this.#attempt(
      method,
      path,
      body,
      call,
      async (res, url) => {
        if (!res.ok) throw apiError(url, res.status, await res.text(), res.headers);
        return res;
      },
      true,
    );
  }

  #backoff(attempt: number, error: unknown): number {
    const ceiling = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** attempt);
    const jittered = Math.random() * ceiling;
    const retryAfter = error instanceof PembaApiError ? retryAfterMs.get(error) : undefined;
    return retryAfter === undefined ? jittered : Math.min(this.#maxDelayMs, Math.max(jittered, retryAfter));
  }

  async #attempt<T>(
    method: string,
    path: string,
    body: unknown,
    call: CallOptions,
    read: (res: Response, url: string) => Promise<T>,
    keepSignal = false,
  ): Promise<T> {
    const url = this.baseUrl + path;
    const signal = call.signal;
    signal?.throwIfAborted();
    const timeoutMs = call.timeoutMs ?? this.#timeoutMs;
    const controller = new AbortController();
    let timedOut = false;
    const timer =
      timeoutMs > 0 && Number.isFinite(timeoutMs)
        ? setTimeout(() => {
            timedOut = true;
            controller.abort();
          }, timeoutMs)
        : undefined;
    const forward = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", forward, { once: true });
    let ok = false;
    try {
      const res = await this.#fetch(url, {
        method,
        headers: this.#headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
      });
      const result = await read(res, url);
      ok = true;
      return result;
    } catch (error) {
      if (error instanceof PembaError) throw error;
      if (timedOut) throw new PembaTimeoutError(url, timeoutMs);
      if (signal?.aborted) throw signal.reason;
      if (error instanceof SyntaxError)
        throw new PembaError(`${url} answered invalid JSON: ${error.message}`, url);
      throw new PembaConnectionError(url, error);
    } finally {
      clearTimeout(timer);
      if (!(keepSignal && ok)) signal?.removeEventListener("abort", forward);
    }
  }
}

/** `Retry-After` of a 429/503, kept beside the error (not part of its public shape). */
const retryAfterMs = new WeakMap<PembaApiError, number>();

function apiError(url: string, status: number, text: string, headers: Headers): PembaApiError {
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null) {
      // Stream endpoints wrap the status as {"error": {...}} (grpc-gateway's form).
      const inner = (parsed as { error?: unknown }).error;
      body = (typeof inner === "object" && inner !== null ? inner : parsed) as Record<string, unknown>;
    }
  } catch {
    // not JSON: the text is the message
  }
  const error = new PembaApiError(url, status, body, text.slice(0, 200));
  const retryAfter = Number(headers.get("retry-after"));
  if (Number.isFinite(retryAfter) && retryAfter > 0) retryAfterMs.set(error, retryAfter * 1000);
  return error;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((done, fail) => {
    if (signal?.aborted) return fail(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      fail(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      done();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
