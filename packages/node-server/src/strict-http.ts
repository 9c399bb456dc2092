/**
 * Requests whose framing a proxy in front of the server could read differently (request smuggling): Node's HTTP
 * parser (llhttp) accepts them, so they are refused here, before any handler runs, with 400 and `Connection: close`
 * (the rest of the connection's bytes cannot be trusted). What Node refuses itself is left to its own options
 * (`requireHostHeader`, `insecureHTTPParser: false`: see STRICT_SERVER_OPTIONS).
 */
import type { IncomingMessage, ServerOptions, ServerResponse } from "node:http";

/**
 * Node's own strictness, spelled out so a later default change cannot loosen it; and an idle keep-alive connection
 * kept 65 s (Node's default is 5 s), longer than the idle timeouts of common clients and load balancers (60 s and
 * more): a server that closes first races the client's next request on that socket, which fails with a reset.
 * headersTimeout stays above it, as Node asks.
 */
export const STRICT_SERVER_OPTIONS: ServerOptions = {
  insecureHTTPParser: false,
  requireHostHeader: true,
  keepAliveTimeout: 65_000,
  headersTimeout: 66_000,
};

/** Why the request is ambiguous; undefined when its framing is plain HTTP/1.x. */
export function ambiguousFraming(req: IncomingMessage): string | undefined {
  if (req.httpVersionMajor !== 1) return `unsupported HTTP version ${req.httpVersion}`;
  let hosts = 0;
  const codings: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    // only names of the two lengths are lower-cased (a string per header per request otherwise)
    const length = raw[i].length;
    if (length !== 4 && length !== 17) continue;
    const name = raw[i].toLowerCase();
    if (name === "host") hosts++;
    else if (name === "transfer-encoding")
      for (const coding of raw[i + 1].split(",")) codings.push(coding.trim().toLowerCase());
  }
  if (hosts > 1) return "more than one Host header";
  // chunked is the only transfer coding the server decodes: any other would be passed on undecoded
  if (codings.length > 0 && (codings.length > 1 || codings[0] !== "chunked"))
    return `unsupported Transfer-Encoding: ${codings.join(", ")}`;
  return undefined;
}

/** Answers 400 and closes the connection when the request's framing is ambiguous; true when it did. */
export function refuseAmbiguousRequest(req: IncomingMessage, res: ServerResponse): boolean {
  const reason = ambiguousFraming(req);
  if (reason === undefined) return false;
  const body = JSON.stringify({ code: 3, message: `malformed request: ${reason}`, details: [] });
  res.shouldKeepAlive = false;
  res.writeHead(400, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    connection: "close",
  });
  res.end(body);
  return true;
}
