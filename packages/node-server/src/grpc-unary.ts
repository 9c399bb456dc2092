/**
 * Native gRPC unary calls answered straight on the HTTP/2 stream: a call is one length-prefixed message in, one
 * out, then the status in trailers, so reading it takes no request/response objects, no async iterables and no
 * abort controller per call (connect-node's generic path, which serves everything else on the port: streams,
 * Connect, gRPC-Web, compressed messages). The answer itself is the same `callUnary` of @pemba/core that
 * connect-node's path runs: the route's handler through the request pipeline.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { callUnary, type PembaApp, RPC_ROUTES, type RpcRoute } from "@pemba/core";
import { encodeGrpcMessage } from "./grpc-message.ts";

const GRPC_TYPES = new Set(["application/grpc", "application/grpc+proto"]);
/** Length-prefixed message: a compression flag byte and a 4-byte big-endian length. */
const PREFIX_BYTES = 5;

/** The unary RPCs by request path (`/base.v1.Permission/Check`). */
const UNARY = new Map<string, RpcRoute>(
  RPC_ROUTES.filter((r) => r.method.methodKind === "unary").map((r) => [
    `/${r.method.parent.typeName}/${r.method.name}`,
    r,
  ]),
);

function fail(stream: ServerHttp2Stream, code: Code, message: string): void {
  if (stream.destroyed || stream.closed) return;
  // trailers-only answer: the status in the one header block
  stream.respond(
    {
      ":status": 200,
      "content-type": "application/grpc",
      "grpc-status": String(code),
      "grpc-message": encodeGrpcMessage(message),
    },
    { endStream: true },
  );
}

/**
 * A `stream` listener's first look: answers `stream` and returns true when it is a native gRPC unary call of
 * base.v1 with an uncompressed message of at most `maxBytes`; false leaves it to the generic path.
 */
export function unaryGrpcHandler(app: PembaApp, maxBytes: number) {
  return (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): boolean => {
    if (headers[":method"] !== "POST") return false;
    const rpc = UNARY.get(headers[":path"] ?? "");
    if (rpc === undefined) return false;
    if (!GRPC_TYPES.has(headers["content-type"] ?? "")) return false;
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;

    const chunks: Buffer[] = [];
    let size = 0;
    stream.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes + PREFIX_BYTES) {
        fail(stream, Code.ResourceExhausted, `message larger than ${maxBytes} bytes`);
        stream.close();
        return;
      }
      chunks.push(chunk);
    });
    stream.on("error", () => {});
    stream.on("end", () => {
      if (stream.destroyed || stream.closed) return;
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (
        body.length < PREFIX_BYTES ||
        body[0] !== 0 ||
        body.readUInt32BE(1) !== body.length - PREFIX_BYTES
      ) {
        fail(stream, Code.Internal, "protocol error: one uncompressed length-prefixed message expected");
        return;
      }
      let message: ReturnType<typeof fromBinary>;
      try {
        message = fromBinary(rpc.method.input, body.subarray(PREFIX_BYTES));
      } catch (e) {
        fail(stream, Code.Internal, `cannot decode ${rpc.method.input.typeName}: ${String(e)}`);
        return;
      }
      const header = (name: string): string | undefined => {
        const value = headers[name];
        return Array.isArray(value) ? value.join(", ") : value;
      };
      callUnary(app, rpc, message, { header }).then(
        (answer) => {
          if (stream.destroyed || stream.closed) return;
          const bytes = toBinary(rpc.method.output, answer);
          const frame = Buffer.allocUnsafe(PREFIX_BYTES + bytes.length);
          frame[0] = 0;
          frame.writeUInt32BE(bytes.length, 1);
          frame.set(bytes, PREFIX_BYTES);
          stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
          stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
          stream.end(frame);
        },
        (e: unknown) => {
          const error = ConnectError.from(e);
          fail(stream, error.code, error.rawMessage);
        },
      );
    });
    return true;
  };
}
