/**
 * The node:http adapter of the API routes: a request the core route table (`matchRoute`) says is one of its routes
 * whose answer does not stream goes from node:http's (req, res) straight to the core app's request pipeline
 * (`app.handle`, the handler Hono serves the route with), without the router or Request/Response objects, and the
 * answer goes out with a Content-Length (one socket write). Everything else goes to Hono through
 * @hono/node-server: the NDJSON streams (watch, lookup-entity-stream), CORS preflights, /healthz, /metrics, /docs,
 * /openapi.json, /console, unknown paths, a known path with another method, and a path parameter that is not
 * valid percent-encoding (Hono keeps such a parameter as it stands). Both run the same pipeline: auth, tenant,
 * limits, errors, CORS, observe.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { getRequestListener } from "@hono/node-server";
import {
  type Answer,
  type ApiRequest,
  type ApiRoute,
  type DecodedMatch,
  decodedParams,
  type PembaApp,
  PembaError,
  requestTooLarge,
  routeMatcher,
} from "@pemba/core";

export { decodedParams, routeMatcher };

/** An IncomingMessage as the pipeline's request; the body is read under the limit, counted while it arrives. */
class NodeRequest implements ApiRequest {
  readonly #req: IncomingMessage;
  readonly #params: Record<string, string>;
  readonly method: string;
  /** The body was cut off at the limit: after the answer the rest is drained, then the connection closes. */
  cutOff = false;

  constructor(req: IncomingMessage, method: string, params: Record<string, string>) {
    this.#req = req;
    this.method = method;
    this.#params = params;
  }

  header(name: string): string | undefined {
    const value = this.#req.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  }

  param(name: string): string | undefined {
    return this.#params[name];
  }

  text(maxBytes: number): Promise<string> {
    const req = this.#req;
    return new Promise((resolve, reject) => {
      if (Number(req.headers["content-length"]) > maxBytes) {
        this.cutOff = true;
        reject(requestTooLarge());
        return;
      }
      const chunks: Buffer[] = [];
      let bytes = 0;
      const stop = (error: PembaError) => {
        req.off("data", onData);
        req.off("end", onEnd);
        req.off("close", onClose);
        reject(error);
      };
      const onData = (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= maxBytes) {
          chunks.push(chunk);
          return;
        }
        this.cutOff = true;
        stop(requestTooLarge());
      };
      const onEnd = () => {
        req.off("close", onClose);
        resolve(chunks.length === 1 ? chunks[0]!.toString() : Buffer.concat(chunks).toString());
      };
      // the client went away before the body ended: the request fails (and is logged) instead of waiting forever
      const onClose = () => stop(new PembaError("ERROR_CODE_CANCELLED"));
      req.on("data", onData);
      req.on("end", onEnd);
      req.on("close", onClose);
    });
  }
}

/** Writes an answer: a string (or no) body with a Content-Length in one `end`; a stream body piped as it comes (chunked). */
export function writeAnswer(res: ServerResponse, answer: Answer): void {
  const body = answer.body;
  if (body !== null && typeof body !== "string") {
    res.writeHead(answer.status, answer.headers);
    Readable.fromWeb(body as NodeReadableStream<Uint8Array>).pipe(res);
    return;
  }
  const text = body ?? "";
  res.writeHead(answer.status, answer.headers.concat("content-length", String(Buffer.byteLength(text))));
  res.end(text);
}

/** How long, and how many bytes, the rest of a body cut off at the limit is read and dropped before the close. */
export const DRAIN_MS = 500;
export const DRAIN_BYTES = 64 * 1048576;

/**
 * After the answer to a body cut off at the limit (413), reads and drops the rest of the body for at most DRAIN_MS
 * and DRAIN_BYTES, then ends the connection. Closing at once would make the kernel answer the client's next bytes
 * with a reset, and a reset can discard the 413 before the client has read it (the client then sees EPIPE or
 * ECONNRESET instead of the answer). A body that ends within the budget leaves the connection open for the next
 * request. The same budget and behaviour as @hono/node-server's, which serves the other routes.
 */
export function drainThenClose(req: IncomingMessage): void {
  let bytes = 0;
  const done = () => {
    clearTimeout(timer);
    req.off("data", onData);
    req.off("end", done);
    req.off("error", done);
  };
  const close = () => {
    done();
    if (!req.socket.destroyed) req.socket.destroySoon();
  };
  const onData = (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > DRAIN_BYTES) close();
  };
  const timer = setTimeout(close, DRAIN_MS);
  timer.unref();
  req.on("data", onData);
  req.on("end", done);
  req.on("error", done);
  req.resume();
}

/**
 * Answers `req` when its route (`matched`) is a route of the table whose answer does not stream (with decodable
 * path parameters) and returns true; returns false for anything else (hand it to Hono).
 */
export function handleNodeRoute(
  app: PembaApp,
  req: IncomingMessage,
  res: ServerResponse,
  matched: NodeMatch | undefined,
): boolean {
  if (matched === undefined) return false;
  const { match, params } = matched;
  if (match.route.endpoint.stream || params === undefined) return false;
  const request = new NodeRequest(req, match.route.method, params);
  const answer = app.handle(match.route, request);
  if (answer === undefined) return false;
  void answer.then((a) => {
    writeAnswer(res, a);
    if (request.cutOff) drainThenClose(req);
  });
  return true;
}

/** A request line's route: the table's match and its path parameters percent-decoded (core's `routeMatcher`). */
export type NodeMatch = DecodedMatch;

/**
 * The server's request listener: the table's non-streaming routes on node:http (`handleNodeRoute`), everything
 * else through Hono. `onRoute` sees every request of the table's routes first (the heap compactor counts writes).
 */
export function apiRequestListener(
  app: PembaApp,
  onRoute?: (route: ApiRoute, req: IncomingMessage) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  const hono = getRequestListener(app.fetch);
  const match = routeMatcher();
  return (req, res) => {
    const matched = req.url === undefined ? undefined : match(req.method ?? "", req.url);
    if (matched !== undefined) onRoute?.(matched.match.route, req);
    if (!handleNodeRoute(app, req, res, matched)) void hono(req, res);
  };
}
