/**
 * The gRPC port: Permify's base.v1 services (and Connect, gRPC-Web on the same paths), health and reflection, over
 * HTTP/2 (cleartext, or TLS with a certificate and key), served by connect-node. Every RPC runs its HTTP route's
 * handler through the app's request pipeline (@pemba/core's grpc/transport.ts). Native unary calls take a shorter
 * road to the same answer (grpc-unary.ts).
 */
import { readFileSync } from "node:fs";
import type { OutgoingHttpHeaders } from "node:http";
import {
  createSecureServer,
  createServer,
  type Http2SecureServer,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { defaultLimits, grpcTypeRegistry, type PembaApp, registerGrpcServices } from "@pemba/core";
import { grpcMessageEncoding } from "./grpc-message.ts";
import { unaryGrpcHandler } from "./grpc-unary.ts";
import type { OverloadGuard } from "./overload.ts";

export interface GrpcServerOptions {
  host: string;
  port: number;
  tls?: { certFile: string; keyFile: string };
  /** The HTTP port's load shedder: calls are shed and counted in flight with its requests. */
  overload?: OverloadGuard;
}

export interface GrpcServer {
  /** `host:port`, what a gRPC client dials. */
  address: string;
  tls: boolean;
  /** Stops accepting; open calls get `graceMs` to finish (a watch ends when the service closes its watches). */
  close(graceMs: number): Promise<void>;
}

/** The largest request message: the largest request body the HTTP API takes (a proto message is no larger). */
const READ_MAX_BYTES = Math.max(defaultLimits.maxBodyBytes, defaultLimits.maxSchemaBodyBytes);

export async function startGrpcServer(app: PembaApp, options: GrpcServerOptions): Promise<GrpcServer> {
  const connect = connectNodeAdapter({
    routes: (router) => registerGrpcServices(router, app),
    readMaxBytes: READ_MAX_BYTES,
    // Connect's JSON encoding reads and writes attribute values (google.protobuf.Any) by their types
    jsonOptions: { registry: grpcTypeRegistry },
  });
  const handler = (req: Http2ServerRequest, res: Http2ServerResponse): void => {
    const addTrailers = res.addTrailers.bind(res);
    res.addTrailers = (trailers) => {
      const message = (trailers as OutgoingHttpHeaders)["grpc-message"];
      if (typeof message === "string") {
        (trailers as OutgoingHttpHeaders)["grpc-message"] = grpcMessageEncoding(message);
      }
      addTrailers(trailers);
    };
    connect(req, res);
  };
  const server: Http2Server | Http2SecureServer =
    options.tls === undefined
      ? createServer(handler)
      : createSecureServer(
          {
            cert: readFileSync(options.tls.certFile),
            key: readFileSync(options.tls.keyFile),
            allowHTTP1: false,
          },
          handler,
        );
  // native unary calls first (grpc-unary.ts); the compatibility layer's request handler gets the rest
  const [generic] = server.listeners("stream") as ((
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    flags: number,
    rawHeaders: string[],
  ) => void)[];
  if (generic === undefined) throw new Error("the HTTP/2 server has no stream listener");
  server.removeListener("stream", generic);
  const unary = unaryGrpcHandler(app, READ_MAX_BYTES);
  const overload = options.overload;
  server.on(
    "stream",
    (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
      if (overload?.shedStream(stream, headers)) return;
      if (!unary(stream, headers)) generic.call(server, stream, headers, flags, rawHeaders);
    },
  );
  // a call's answer is several small writes (headers, message, trailers): without this, Nagle's algorithm holds
  // the later ones until the client's delayed ACK (tens of milliseconds per call)
  server.on("connection", (socket: Socket) => socket.setNoDelay(true));
  const sessions = new Set<Http2Session>();
  server.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const host = bound.family === "IPv6" ? `[${bound.address}]` : bound.address;
  return {
    address: `${host}:${bound.port}`,
    tls: options.tls !== undefined,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        // GOAWAY: clients open no new stream here; calls in flight finish, then each session closes
        for (const session of sessions) session.close();
        const force = setTimeout(() => {
          for (const session of sessions) session.destroy();
        }, graceMs);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}
