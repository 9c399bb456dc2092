/**
 * The node:http adapter of the check endpoint (and of explain, which takes the check body): a request the core
 * route table (`matchRoute`) says is the check goes from node:http's (req, res) straight to the core app's request
 * pipeline (`app.handleCheck`, `app.handleExplain`), without the
 * router or Request/Response objects, and the answer goes out with a Content-Length (one socket write). Every
 * other request goes to Hono through @hono/node-server. Both run the same pipeline: auth, tenant, limits, errors,
 * CORS, observe.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type Answer,
  type ApiRequest,
  matchRoute,
  type PembaApp,
  ROUTES,
  type RouteMatch,
  requestTooLarge,
} from "@pemba/core";

/** The decoded tenant id of a check's route match; undefined for another route or an undecodable id. */
function checkTenant(match: RouteMatch | undefined, explain = false): string | undefined {
  if (match?.route !== ROUTES.check && (!explain || match?.route !== ROUTES.explain)) return undefined;
  try {
    return decodeURIComponent(match.params.tenant_id!);
  } catch {
    return undefined;
  }
}

/** The tenant id of a check URL (a path, as node:http gives it), or undefined for any other URL. */
export function checkPathTenant(url: string): string | undefined {
  return checkTenant(matchRoute("POST", url));
}

/** An IncomingMessage as the pipeline's request; the body is read under the limit, counted while it arrives. */
class NodeCheckRequest implements ApiRequest {
  readonly #req: IncomingMessage;
  readonly #tenantId: string;
  /** The body was cut off at the limit: the answer closes the connection instead of reading the rest. */
  cutOff = false;

  constructor(req: IncomingMessage, tenantId: string) {
    this.#req = req;
    this.#tenantId = tenantId;
  }

  readonly method = "POST";

  header(name: string): string | undefined {
    const value = this.#req.headers[name];
    return Array.isArray(value) ? value.join(", ") : value;
  }

  param(name: string): string | undefined {
    return name === "tenant_id" ? this.#tenantId : undefined;
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
      const onData = (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= maxBytes) {
          chunks.push(chunk);
          return;
        }
        req.off("data", onData);
        req.off("end", onEnd);
        this.cutOff = true;
        reject(requestTooLarge());
      };
      const onEnd = () =>
        resolve(chunks.length === 1 ? chunks[0]!.toString() : Buffer.concat(chunks).toString());
      req.on("data", onData);
      req.on("end", onEnd);
    });
  }
}

/** Writes a (string-bodied) answer with a Content-Length; `close`: end the connection after it. */
function writeAnswer(res: ServerResponse, answer: Answer, close: boolean): void {
  const body = typeof answer.body === "string" ? answer.body : "";
  const headers = answer.headers.concat("content-length", String(Buffer.byteLength(body)));
  if (close) headers.push("connection", "close");
  res.writeHead(answer.status, headers);
  res.end(body);
}

/**
 * Answers `req` when it is a check (or explain) request and returns true; returns false for anything else (hand it
 * to Hono).
 * `match`: the route table's match of the request, when the caller has it already.
 */
export function handleNodeCheck(
  app: PembaApp,
  req: IncomingMessage,
  res: ServerResponse,
  match = req.url === undefined ? undefined : matchRoute(req.method ?? "", req.url),
): boolean {
  const tenantId = checkTenant(match, true);
  if (tenantId === undefined) return false;
  const request = new NodeCheckRequest(req, tenantId);
  const answer = match?.route === ROUTES.explain ? app.handleExplain(request) : app.handleCheck(request);
  void answer.then((a) => writeAnswer(res, a, request.cutOff));
  return true;
}
