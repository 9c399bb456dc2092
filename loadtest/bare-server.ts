/**
 * The benchmark's floor: a bare node:http server that reads the request body and answers a fixed check response.
 *   node --experimental-strip-types loadtest/bare-server.ts <port>
 */
import { createServer } from "node:http";

const BODY = JSON.stringify({ can: "CHECK_RESULT_ALLOWED", metadata: { check_count: 0 } });
const port = Number(process.argv[2] ?? 3477);

const server = createServer((request, response) => {
  request.on("data", () => {});
  request.on("end", () => {
    response.writeHead(200, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(BODY),
    });
    response.end(BODY);
  });
});
server.listen(port, "127.0.0.1");
process.on("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
