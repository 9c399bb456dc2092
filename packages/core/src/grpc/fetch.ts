/**
 * Connect and gRPC-Web over fetch (the Worker): the same services and handlers as the Node server's gRPC port. A
 * fetch `Response` has no trailers, so native gRPC (which ends every call with trailers) cannot be answered here;
 * Connect and gRPC-Web carry the status in the body. Reflection is left out: its one RPC is a bidirectional stream,
 * which needs HTTP/2 end to end.
 *
 * A call from a page of another origin gets the CORS headers the HTTP API gives (the app's CORS policy: the request
 * pipeline refuses an origin it does not allow), and the status headers gRPC-Web and Connect clients read are
 * exposed to the page. Preflights are the HTTP API's (the app answers OPTIONS for every path).
 */
import { createConnectRouter } from "@connectrpc/connect";
import { createFetchHandler } from "@connectrpc/connect/protocol";
import type { PembaApp } from "../http/app.ts";
import { pathOf } from "../http/fetch-routes.ts";
import { registerGrpcServices } from "./transport.ts";
import { typeRegistry } from "./type-registry.ts";

/** Answers a Connect or gRPC-Web call; undefined for any other request (the caller serves it). */
export type ConnectFetchHandler = (request: Request) => Promise<Response> | undefined;

export function createConnectFetchHandler(app: PembaApp, readMaxBytes: number): ConnectFetchHandler {
  const router = createConnectRouter({
    grpc: false,
    grpcWeb: true,
    connect: true,
    readMaxBytes,
    // Connect's JSON encoding reads and writes attribute values (google.protobuf.Any) by their types
    jsonOptions: { registry: typeRegistry },
  });
  registerGrpcServices(router, app, { reflection: false });
  const handlers = new Map(router.handlers.map((h) => [h.requestPath, createFetchHandler(h)]));
  return (request) => {
    if (request.method !== "POST" && request.method !== "GET") return undefined;
    // a Request's URL is serialized already: its path is the text after the authority, up to the query
    const path = pathOf(request.url);
    const handler = path === undefined ? undefined : handlers.get(path);
    if (handler === undefined) return undefined;
    const origin = request.headers.get("origin");
    const answer = handler(request);
    if (origin === null) return answer;
    const cors = app.cors.headersFor(origin);
    return cors.length === 0 ? answer : answer.then((response) => withCors(response, cors));
  };
}

/** Response headers a cross-origin page's client must read: the status of gRPC-Web (Connect's is in the body). */
const EXPOSED_HEADERS = "grpc-status, grpc-message, grpc-status-details-bin";

/** `response` with the CORS headers `cors` ([name, value, ...]) and the exposed status headers. */
function withCors(response: Response, cors: string[]): Response {
  const headers = new Headers(response.headers);
  for (let i = 0; i < cors.length; i += 2) headers.append(cors[i]!, cors[i + 1]!);
  headers.set("access-control-expose-headers", EXPOSED_HEADERS);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}
