/**
 * CORS. A browser can send a "simple" cross-origin request (a POST with a text/plain body) without a preflight, so
 * the policy does more than decorate answers: a request whose `Origin` is neither the server's own origin nor an
 * allowed one is refused before anything runs (no write, no answer to read).
 *
 * - Default (no list): same-origin only; no CORS headers for anyone else.
 * - A list of origins: those origins are echoed with `Access-Control-Allow-Credentials: true`.
 * - `"*"` (Permify's default): every origin may call and read answers, as `Access-Control-Allow-Origin: *`
 *   WITHOUT credentials (browsers then send no cookies or HTTP auth of their own; a page must set `Authorization`
 *   itself). An origin is never echoed with credentials unless it is listed.
 * Methods GET, POST, HEAD, PATCH, DELETE, PUT and any request headers are allowed, as in Permify's gateway.
 */
import { PembaError } from "../errors.ts";
import type { Answer, ApiRequest } from "./exchange.ts";

export interface CorsOptions {
  origins: string[] | "*";
}

export const CORS_METHODS = "GET, POST, HEAD, PATCH, DELETE, PUT";

export class CorsPolicy {
  readonly #all: boolean;
  readonly #origins: Set<string>;
  readonly #setting: string;

  /** `setting`: where origins are allowed, as the runtime names it (a flag or a Worker var), for refusals. */
  constructor(options: CorsOptions = { origins: [] }, setting = "--cors-origins") {
    this.#setting = setting;
    this.#all = options.origins === "*" || options.origins.includes("*");
    this.#origins = new Set(options.origins === "*" ? [] : options.origins);
  }

  /** May a page of `origin` call this server (reached as `host`)? */
  allows(origin: string, host: string | undefined): boolean {
    return this.#all || this.#origins.has(origin) || sameOrigin(origin, host);
  }

  /**
   * Throws 403 for a request from a page whose origin may not call this server. Requests without an `Origin`
   * header (servers, curl, same-origin navigation) pass.
   */
  admit(origin: string | undefined, host: string | undefined): void {
    if (origin === undefined || this.allows(origin, host)) return;
    throw new PembaError(
      "ERROR_CODE_PERMISSION_DENIED",
      `cross-origin request from ${JSON.stringify(origin)} refused: origin not allowed (${this.#setting})`,
      { grpcCode: 7 },
    );
  }

  /** CORS headers of an actual (non-preflight) answer to an admitted request from `origin`, as [name, value, ...]. */
  headersFor(origin: string | undefined): string[] {
    if (origin === undefined) return [];
    if (this.#origins.has(origin))
      return [
        "access-control-allow-origin",
        origin,
        "access-control-allow-credentials",
        "true",
        "vary",
        "Origin",
      ];
    if (this.#all) return ["access-control-allow-origin", "*"];
    return [];
  }

  /** The answer to a preflight (OPTIONS) request (the pipeline adds the allow-origin headers of `headersFor`). */
  preflight(req: ApiRequest): Answer {
    const origin = req.header("origin");
    const headers = ["vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"];
    if (origin !== undefined && (this.#all || this.#origins.has(origin))) {
      headers.push("access-control-allow-methods", CORS_METHODS);
      const requested = req.header("access-control-request-headers");
      if (requested) headers.push("access-control-allow-headers", requested);
    }
    return { status: 204, headers, body: null };
  }
}

/** Is `origin` (scheme://host[:port]) the origin of the server reached as `host` (the Host header)? */
function sameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  const at = origin.indexOf("://");
  return at > 0 && origin.slice(at + 3) === host;
}
