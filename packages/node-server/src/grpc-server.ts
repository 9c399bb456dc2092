/**
 * The gRPC port: Permify's base.v1 services (and Connect, gRPC-Web on the same paths), health and reflection, over
 * HTTP/2 (cleartext, or TLS with a certificate and key), served by connect-node. Every RPC runs its HTTP route's
 * handler through the app's request pipeline (@pemba/core's grpc/transport.ts).
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
} from "node:http2";
import type { AddressInfo } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { defaultLimits, grpcTypeRegistry, type PembaApp, registerGrpcServices } from "@pemba/core";

export interface GrpcServerOptions {
  host: string;
  port: number;
  tls?: { certFile: string; keyFile: string };
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

/**
 * A status message as the gRPC spec percent-encodes it: only bytes outside printable ASCII, and `%`. connect
 * encodes with encodeURIComponent (`:` as `%3A`), which grpc-js (so permify-node) decodes with decodeURI, leaving
 * `%3A` in the message; grpc-go servers such as Permify's send `:` as it is.
 */
export function grpcMessageEncoding(encoded: string): string {
  let text: string;
  try {
    text = decodeURIComponent(encoded);
  } catch {
    return encoded;
  }
  let out = "";
  for (const byte of new TextEncoder().encode(text)) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

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
