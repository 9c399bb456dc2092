/**
 * Connect and gRPC-Web over fetch (the Worker): the same services and handlers as the Node server's gRPC port. A
 * fetch `Response` has no trailers, so native gRPC (which ends every call with trailers) cannot be answered here;
 * Connect and gRPC-Web carry the status in the body. Reflection is left out: its one RPC is a bidirectional stream,
 * which needs HTTP/2 end to end.
 */
import { createConnectRouter } from "@connectrpc/connect";
import { createFetchHandler } from "@connectrpc/connect/protocol";
import type { PembaApp } from "../http/app.ts";
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
    const path = new URL(request.url).pathname;
    return handlers.get(path)?.(request);
  };
}
