/**
 * The transports alone, for ab-grpc.ts --bare: a node:http server and a node:http2 (h2c) server that read a request
 * and answer a fixed check decision (JSON; one gRPC message of base.v1.PermissionCheckResponse and its trailers),
 * with no authentication, validation or evaluation. The HTTP/2 side uses node:http2's core API (the session's
 * 'stream' event, no compatibility request/response objects).
 *   node --experimental-strip-types loadtest/grpc-bare-server.ts <http port> <grpc port> [variant]
 * variant (how the HTTP/2 side answers, to find the cheapest form node:http2 offers):
 *   end         (default) respond with waitForTrailers in the request's 'end' callback, end(message), trailers
 *   tuned       as end, with the server's settings of grpc-server.ts (no push, 1 MiB stream and session windows)
 *   first-data  as end, but answered on the request's first 'data' chunk (no wait for its 'end')
 *   no-trailers the status in the header block, then end(message) (NOT valid gRPC: the cost of the trailers)
 */
import { createServer } from "node:http";
import { createServer as createHttp2Server, type Http2Session, type ServerHttp2Stream } from "node:http2";
import type { Socket } from "node:net";

const json = '{"can":"CHECK_RESULT_ALLOWED","metadata":{"check_count":1}}';
// length-prefixed PermissionCheckResponse { can: CHECK_RESULT_ALLOWED, metadata: { check_count: 1 } }
const message = Buffer.from([0, 0, 0, 0, 6, 0x08, 0x01, 0x12, 0x02, 0x08, 0x01]);
const variant = process.argv[4] ?? "end";
if (!["end", "tuned", "first-data", "no-trailers"].includes(variant))
  throw new Error(`unknown variant ${variant}`);

createServer((req, res) => {
  req.on("data", () => {});
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(json);
  });
}).listen(Number(process.argv[2]), "127.0.0.1");

const OK_HEADERS = { ":status": 200, "content-type": "application/grpc" };
const OK_TRAILERS = { "grpc-status": "0" };
const WAIT_FOR_TRAILERS = { waitForTrailers: true };
const TRAILERS_ONLY = { ":status": 200, "content-type": "application/grpc", "grpc-status": "0" };
function sendTrailers(this: ServerHttp2Stream) {
  this.sendTrailers(OK_TRAILERS);
}
function answer(stream: ServerHttp2Stream) {
  if (variant === "no-trailers") {
    stream.respond(TRAILERS_ONLY);
    stream.end(message);
    return;
  }
  stream.respond(OK_HEADERS, WAIT_FOR_TRAILERS);
  stream.once("wantTrailers", sendTrailers);
  stream.end(message);
}
const ignore = () => {};

const WINDOW = 1 << 20;
const http2 = createHttp2Server(
  variant === "tuned" ? { settings: { enablePush: false, initialWindowSize: WINDOW } } : {},
);
http2.on("connection", (socket: Socket) => socket.setNoDelay(true));
if (variant === "tuned") http2.on("session", (session: Http2Session) => session.setLocalWindowSize(WINDOW));
http2.on("stream", (stream: ServerHttp2Stream) => {
  if (variant === "first-data") {
    stream.once("data", () => answer(stream));
    stream.on("data", ignore);
    return;
  }
  stream.on("data", ignore);
  stream.on("end", () => answer(stream));
});
http2.listen(Number(process.argv[3]), "127.0.0.1");

// a normal exit on SIGTERM, so that `--cpu-prof` writes its profile
process.on("SIGTERM", () => process.exit(0));
