/**
 * CORS like Permify's gateway (rs/cors): origins configurable (default all), methods GET, POST, HEAD, PATCH,
 * DELETE, PUT, any request headers, credentials allowed — so the allowed origin is echoed, never "*".
 */
export interface CorsOptions {
  origins: string[] | "*";
}

export const CORS_METHODS = "GET, POST, HEAD, PATCH, DELETE, PUT";

export class CorsPolicy {
  readonly #all: boolean;
  readonly #origins: Set<string>;

  constructor(options: CorsOptions = { origins: "*" }) {
    this.#all = options.origins === "*";
    this.#origins = new Set(options.origins === "*" ? [] : options.origins);
  }

  allows(origin: string): boolean {
    return this.#all || this.#origins.has(origin);
  }

  /** CORS headers of an actual response for an allowed origin. */
  headersFor(origin: string): Record<string, string> {
    return {
      "access-control-allow-origin": origin,
      "access-control-allow-credentials": "true",
      vary: "Origin",
    };
  }

  /** Headers of an actual (non-preflight) response. */
  decorate(origin: string, headers: Headers): void {
    if (!this.allows(origin)) return;
    headers.set("access-control-allow-origin", origin);
    headers.set("access-control-allow-credentials", "true");
    headers.append("vary", "Origin");
  }

  /** The answer to a preflight request. */
  preflight(req: Request): Response {
    const origin = req.headers.get("origin");
    const headers = new Headers({
      vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
    });
    if (origin !== null && this.allows(origin)) {
      headers.set("access-control-allow-origin", origin);
      headers.set("access-control-allow-credentials", "true");
      headers.set("access-control-allow-methods", CORS_METHODS);
      const requested = req.headers.get("access-control-request-headers");
      if (requested) headers.set("access-control-allow-headers", requested);
    }
    return new Response(null, { status: 204, headers });
  }
}
