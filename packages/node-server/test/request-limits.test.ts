/**
 * The body size limit over real HTTP on `pemba serve`: a chunked body (no Content-Length) that never ends is
 * refused with 413 once 4 MiB have arrived, on the check path and on the routed endpoints, and the server stays up.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, startServe } from "./cli-process.ts";

const MiB = 1048576;
/** The client stops sending here: a server that buffers without limit would still be waiting for the end. */
const SEND_AT_MOST = 64 * MiB;

interface EndlessAnswer {
  status: number;
  body: string;
  /** Bytes the client had written when the answer arrived. */
  sentBeforeAnswer: number;
}

/** POSTs 64 KiB chunks (Transfer-Encoding: chunked) until the server answers or SEND_AT_MOST is reached. */
function postEndless(
  url: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<EndlessAnswer> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    let sent = 0;
    let answered = false;
    const req = request(
      { hostname, port, path, method: "POST", headers: { ...headers, "transfer-encoding": "chunked" } },
      (res) => {
        answered = true;
        const sentBeforeAnswer = sent;
        let body = "";
        res.on("data", (d: Buffer) => {
          body += d.toString();
        });
        res.on("end", () => {
          resolve({ status: res.statusCode!, body, sentBeforeAnswer });
          req.destroy();
        });
      },
    );
    // Writes after the server closed the connection fail (EPIPE / ECONNRESET): expected once it answered.
    req.on("error", (e) => {
      if (!answered) reject(e);
    });
    const chunk = Buffer.alloc(64 * 1024, "{");
    const pump = () => {
      while (!answered && sent < SEND_AT_MOST) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once("drain", pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}

describe("pemba serve: a chunked body over the 4 MiB limit", () => {
  let server: CliProcess & { url: string };
  beforeAll(async () => {
    server = await startServe(["--database", "memory:", "--auth-keys", "admin,k2:t2"]);
  });
  afterAll(async () => {
    if (server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  const TOO_LARGE = { code: 8, message: "ERROR_CODE_REQUEST_TOO_LARGE", details: [] };
  const admin = { authorization: "Bearer admin" };

  it.each([
    "/v1/tenants/t1/permissions/check",
    "/v1/tenants/t1/data/write",
    "/v1/tenants/t1/permissions/bulk-check",
    "/v1/tenants/t1/schemas/write",
  ])("%s: answered 413 while the body is still arriving; the server stays up", async (path) => {
    const answer = await postEndless(server.url, path, admin);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toEqual(TOO_LARGE);
    expect(answer.sentBeforeAnswer).toBeLessThan(SEND_AT_MOST);
    const health = await fetch(`${server.url}/healthz`);
    expect(await health.json()).toEqual({ status: "SERVING" });
    expect(server.child.exitCode).toBeNull();
  });

  it("a key limited to another tenant is refused before the body is read", async () => {
    const answer = await postEndless(server.url, "/v1/tenants/t1/permissions/check", {
      authorization: "Bearer k2",
    });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body)).toEqual({
      code: 7,
      message: "ERROR_CODE_PERMISSION_DENIED",
      details: [],
    });
    expect(answer.sentBeforeAnswer).toBeLessThan(SEND_AT_MOST);
    expect(server.child.exitCode).toBeNull();
  });
});
