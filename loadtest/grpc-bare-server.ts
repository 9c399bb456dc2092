/**
 * The transports alone, for ab-grpc.ts --bare: a node:http server and a node:http2 (h2c) server that read a request
 * and answer a fixed check decision (JSON; one gRPC message of base.v1.PermissionCheckResponse and its trailers),
 * with no authentication, validation or evaluation.
 *   node --experimental-strip-types loadtest/grpc-bare-server.ts <http port> <grpc port>
 */
import { createServer } from "node:http";
import { createServer as createHttp2Server, type ServerHttp2Stream } from "node:http2";
import type { Socket } from "node:net";

const json = '{"can":"CHECK_RESULT_ALLOWED","metadata":{"check_count":1}}';
// length-prefixed PermissionCheckResponse { can: CHECK_RESULT_ALLOWED, metadata: { check_count: 1 } }
const message = Buffer.from([0, 0, 0, 0, 6, 0x08, 0x01, 0x12, 0x02, 0x08, 0x01]);

createServer((req, res) => {
  req.on("data", () => {});
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(json);
  });
}).listen(Number(process.argv[2]), "127.0.0.1");

const http2 = createHttp2Server();
http2.on("connection", (socket: Socket) => socket.setNoDelay(true));
http2.on("stream", (stream: ServerHttp2Stream) => {
  stream.on("data", () => {});
  stream.on("end", () => {
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(message);
  });
});
http2.listen(Number(process.argv[3]), "127.0.0.1");

// a normal exit on SIGTERM, so that `--cpu-prof` writes its profile
process.on("SIGTERM", () => process.exit(0));
