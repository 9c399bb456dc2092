import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServe } from "../src/testing/cli-process.ts";
import { check, checkBody, tuple, writeSchema, writeTuples } from "./api-client.ts";

/** Sends a request in two parts over a raw socket; resolves with the full raw response text. */
function slowRequest(url: string, path: string, body: string) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let response = "";
  socket.on("data", (chunk) => {
    response += chunk.toString();
  });
  const ended = new Promise<string>((done, fail) => {
    socket.on("end", () => done(response));
    socket.on("error", fail);
  });
  const half = Math.floor(body.length / 2);
  const connected = new Promise<void>((done) => socket.on("connect", () => done()));
  return {
    async sendFirstHalf() {
      await connected;
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: keep-alive\r\n\r\n${body.slice(0, half)}`,
      );
    },
    sendRest() {
      socket.write(body.slice(half));
    },
    ended,
  };
}

/** The body of a raw HTTP/1.1 response, de-chunked when it uses chunked transfer encoding. */
function responseBody(raw: string): string {
  const split = raw.indexOf("\r\n\r\n");
  const head = raw.slice(0, split).toLowerCase();
  let rest = raw.slice(split + 4);
  if (!head.includes("transfer-encoding: chunked")) return rest;
  let body = "";
  for (;;) {
    const lineEnd = rest.indexOf("\r\n");
    const size = Number.parseInt(rest.slice(0, lineEnd), 16);
    if (!size) return body;
    body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 2 + size + 2);
  }
}

describe("graceful shutdown", () => {
  let dir: string;
  let database: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "pemba-shutdown-"));
    database = join(dir, "pemba.db");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("SIGTERM: refuses new connections, answers the in-flight request, closes the database, exits 0", async () => {
    const server = await startServe(["--database", database]);
    await writeSchema(server.url);
    await writeTuples(server.url, [tuple("document:1", "owner", "user:alice")]);

    const slow = slowRequest(
      server.url,
      "/v1/tenants/t1/permissions/check",
      JSON.stringify(checkBody("document:1", "view", "user:alice")),
    );
    await slow.sendFirstHalf();
    await new Promise((r) => setTimeout(r, 200));
    server.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));

    // Still running (the in-flight request holds it), but no longer accepting.
    expect(server.child.exitCode).toBeNull();
    await expect(fetch(`${server.url}/metrics`)).rejects.toThrow();

    slow.sendRest();
    const raw = await slow.ended;
    expect(raw.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    expect(JSON.parse(responseBody(raw))).toMatchObject({ can: "CHECK_RESULT_ALLOWED" });

    const result = await server.exited;
    expect(result.code).toBe(0);
    expect(result.signal).toBeNull();
    const lines = result.stdout.split("\n").filter((l) => l.startsWith("{"));
    expect(JSON.parse(lines[lines.length - 1]).msg).toBe("pemba stopped; database closed");
    // A cleanly closed SQLite database leaves no write-ahead log behind.
    expect(existsSync(`${database}-wal`)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.endsWith("-journal"))).toEqual([]);
  });

  it("SIGTERM during a keep-alive client's writes: the in-flight write answers `Connection: close`", async () => {
    const server = await startServe(["--database", join(dir, "keep-alive.db")]);
    await writeSchema(server.url);
    const body = JSON.stringify({
      metadata: { schema_version: "" },
      tuples: [tuple("document:2", "owner", "user:bob")],
    });
    const write = slowRequest(server.url, "/v1/tenants/t1/data/write", body);
    await write.sendFirstHalf();
    await new Promise((r) => setTimeout(r, 200));
    server.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    write.sendRest();
    // the server ends the connection after the answer: the client does not write its next request on it
    const raw = await write.ended;
    const head = raw.slice(0, raw.indexOf("\r\n\r\n")).toLowerCase().split("\r\n");
    expect(head[0]).toBe("http/1.1 200 ok");
    expect(head).toContain("connection: close");
    expect(JSON.parse(responseBody(raw))).toHaveProperty("snap_token");
    // the client's next write opens a new connection, which is refused (not reset mid-request)
    await expect(
      fetch(`${server.url}/v1/tenants/t1/data/write`, { method: "POST", body }),
    ).rejects.toMatchObject({
      cause: { code: "ECONNREFUSED" },
    });
    expect((await server.exited).code).toBe(0);
  });

  it("SIGTERM ends open watch streams cleanly instead of holding the shutdown until they are cut", async () => {
    const server = await startServe(["--database", join(dir, "watch.db")]);
    const res = await fetch(`${server.url}/v1/tenants/t1/watch`, { method: "POST", body: "{}" });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const read = reader.read();
    await new Promise((r) => setTimeout(r, 200));
    server.child.kill("SIGTERM");
    // the response ends (a cut connection would reject the read)
    expect(await read).toEqual({ done: true, value: undefined });
    const result = await server.exited;
    expect(result.code).toBe(0);
  });

  it("the data written before the shutdown is there after a restart", async () => {
    const server = await startServe(["--database", database]);
    try {
      expect(await check(server.url, "document:1", "view", "user:alice")).toBe("CHECK_RESULT_ALLOWED");
      expect(await check(server.url, "document:1", "view", "user:bob")).toBe("CHECK_RESULT_DENIED");
    } finally {
      server.child.kill("SIGINT");
      expect((await server.exited).code).toBe(0);
    }
  });
});
