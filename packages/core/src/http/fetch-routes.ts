/**
 * The fetch adapter of the API routes (the Worker's): a request whose route the core route table gives (with
 * path parameters that decode) and whose answer does not stream goes from the fetch Request straight to the app's
 * request pipeline (`app.handle`, the handler Hono serves the route with), without Hono's router, Context and
 * request wrapper, as node:http's adapter does. Everything else goes to Hono: the NDJSON streams, CORS preflights,
 * /healthz, /metrics, /docs, /openapi.json, /console, unknown paths, a known path with another method, and a path
 * parameter that is not valid percent-encoding. Both run the same pipeline: auth, tenant, limits, errors, CORS,
 * observe. Per request this allocates a fraction of what Hono's way does, and a Worker's isolate collects garbage
 * on the thread that answers.
 */
import type { PembaApp } from "./app.ts";
import type { ApiRequest } from "./exchange.ts";
import { assertDeclaredWithinLimit, readStreamText, requestTooLarge } from "./request-body.ts";
import { toResponse } from "./route.ts";
import { routeMatcher } from "./route-matcher.ts";

/** UTF-8 without dropping a leading BOM (it fails JSON parsing, as in Permify); decode() without stream is stateless. */
const UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });

/** A fetch Request as the pipeline's request, with the route's decoded path parameters. */
class FetchApiRequest implements ApiRequest {
  readonly #request: Request;
  readonly #params: Record<string, string>;
  readonly method: string;
  readonly url: string;
  readonly path: string;

  constructor(request: Request, method: string, path: string, params: Record<string, string>) {
    this.#request = request;
    this.method = method;
    this.url = request.url;
    this.path = path;
    this.#params = params;
  }

  header(name: string): string | undefined {
    return this.#request.headers.get(name) ?? undefined;
  }

  param(name: string): string | undefined {
    return this.#params[name];
  }

  get signal(): AbortSignal {
    return this.#request.signal;
  }

  /**
   * With a Content-Length within the limit the body is read whole by the runtime (HTTP framing holds it to that
   * length; the count after reading also refuses a body that is longer); without one it is read as a stream,
   * counted while it arrives.
   */
  async text(maxBytes: number): Promise<string> {
    const request = this.#request;
    const declared = request.headers.get("content-length");
    if (declared === null) {
      return readStreamText(request.body, maxBytes);
    }
    assertDeclaredWithinLimit(declared, maxBytes);
    const bytes = await request.arrayBuffer();
    if (bytes.byteLength > maxBytes) throw requestTooLarge();
    return UTF8.decode(bytes);
  }
}

/** The path and query of an absolute URL (after the scheme's "//" and the authority), as a request line has them. */
export function pathAndQuery(url: string): string | undefined {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  return start < 0 ? undefined : url.slice(start);
}

/** The path of an absolute URL, without the query: what `new URL(url).pathname` gives, without parsing the URL. */
export function pathOf(url: string): string | undefined {
  const line = pathAndQuery(url);
  return line === undefined ? undefined : withoutQuery(line);
}

/** A request line's path, without its query. */
function withoutQuery(line: string): string {
  const query = line.indexOf("?");
  return query < 0 ? line : line.slice(0, query);
}

/**
 * The answer to `request` when its route is one of the table's non-streaming routes (a Response promise), else
 * undefined (hand it to Hono).
 */
export function fetchRoutes(app: PembaApp): (request: Request) => Promise<Response> | undefined {
  const match = routeMatcher();
  return (request) => {
    const line = pathAndQuery(request.url);
    if (line === undefined) return undefined;
    const method = request.method;
    const matched = match(method, line);
    if (matched === undefined) return undefined;
    const { params } = matched;
    const route = matched.match.route;
    if (route.endpoint.stream || params === undefined) return undefined;
    return app
      .handle(route, new FetchApiRequest(request, method, withoutQuery(line), params))
      ?.then(toResponse);
  };
}
