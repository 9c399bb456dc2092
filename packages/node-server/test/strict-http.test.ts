/**
 * Request framings a proxy could read differently than Node (request smuggling) are refused with 400 and the
 * connection closed, on the routes served straight on node:http (the check) and on the routes Hono serves (the
 * NDJSON streams); the same requests written plainly are answered 200. Raw bytes over TCP, against `startServer`
 * on `memory:`.
 */
import { connect } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../src/index.ts";
import { checkBody, writeSchema } from "./api-client.ts";

let server: RunningServer;
let port: number;
beforeAll(async () => {
  server = await startServer({ database: "memory:", logger: pino({ level: "silent" }) });
  port = Number(new URL(server.url).port);
  await writeSchema(server.url);
});
afterAll(() => server.close());

/** Sends `head` (CRLF-joined lines) and `body`, reads until the server closes or 2 s pass. */
function raw(head: string[], body: string): Promise<{ status: number; text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    let closed = false;
    const timer = setTimeout(() => {
      socket.destroy();
      finish();
    }, 2000);
    const finish = () => {
      clearTimeout(timer);
      resolve({ status: Number(text.slice(9, 12)), text, closed });
    };
    socket.on("data", (d) => {
      text += d.toString();
    });
    socket.on("end", () => {
      closed = true;
      finish();
    });
    socket.on("error", reject);
    socket.write(`${head.join("\r\n")}\r\n\r\n${body}`);
  });
}

const CHECK = "/v1/tenants/t1/permissions/check";
const LOOKUP_STREAM = "/v1/tenants/t1/permissions/lookup-entity-stream";
const lookupJson = JSON.stringify({
  metadata: { depth: 20 },
  entity_type: "document",
  permission: "view",
  subject: { type: "user", id: "1" },
});
const checkJson = JSON.stringify(checkBody("document:1", "view", "user:1"));
const chunked = (s: string) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n0\r\n\r\n`;
const plain = (path: string, body: string, extra: string[] = []) => [
  `POST ${path} HTTP/1.1`,
  "Host: 127.0.0.1",
  "Content-Type: application/json",
  `Content-Length: ${Buffer.byteLength(body)}`,
  "Connection: close",
  ...extra,
];

describe.each([
  ["the check (node:http)", CHECK, checkJson],
  ["a stream (Hono)", LOOKUP_STREAM, lookupJson],
])("%s", (_, path, json) => {
  it("answers the plain request and a chunked one 200", async () => {
    expect((await raw(plain(path, json), json)).status).toBe(200);
    const head = [`POST ${path} HTTP/1.1`, "Host: x", "Transfer-Encoding: chunked", "Connection: close"];
    expect((await raw(head, chunked(json))).status).toBe(200);
  });

  it("refuses Transfer-Encoding: gzip, chunked with 400 and closes the connection", async () => {
    const head = [`POST ${path} HTTP/1.1`, "Host: x", "Transfer-Encoding: gzip, chunked"];
    const r = await raw(head, chunked(json));
    expect(r.status).toBe(400);
    expect(r.text).toContain('"message":"malformed request: unsupported Transfer-Encoding: gzip, chunked"');
    expect(r.text.toLowerCase()).toContain("connection: close");
    expect(r.closed).toBe(true);
  });

  it("refuses two Transfer-Encoding headers that together name gzip", async () => {
    const head = [
      `POST ${path} HTTP/1.1`,
      "Host: x",
      "Transfer-Encoding: gzip",
      "Transfer-Encoding: chunked",
    ];
    expect((await raw(head, chunked(json))).status).toBe(400);
  });

  it("refuses two Host headers with 400", async () => {
    const r = await raw([...plain(path, json), "Host: other.example"], json);
    expect(r.status).toBe(400);
    expect(r.text).toContain('"code":3,"message":"malformed request: more than one Host header"');
  });

  it("refuses HTTP/2.0 on an HTTP/1.1 connection with 400", async () => {
    const head = plain(path, json);
    head[0] = `POST ${path} HTTP/2.0`;
    const r = await raw(head, json);
    expect(r.status).toBe(400);
    expect(r.text).toContain("malformed request: unsupported HTTP version 2.0");
  });

  it("a request without Host is refused by Node itself (requireHostHeader)", async () => {
    const head = plain(path, json).filter((h) => !h.startsWith("Host"));
    expect((await raw(head, json)).status).toBe(400);
  });
});

describe("idle keep-alive connections", () => {
  it("a connection idle for longer than Node's default 5 s still takes the client's next request", async () => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    let ended = false;
    socket.on("data", (d) => {
      text += d.toString();
    });
    socket.on("end", () => {
      ended = true;
    });
    const answers = () => text.split("HTTP/1.1 200").length - 1;
    const head = plain(CHECK, checkJson).filter((h) => h !== "Connection: close");
    const request = `${head.join("\r\n")}\r\n\r\n${checkJson}`;
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((r) => setTimeout(r, 50));
    };
    socket.write(request);
    await until(() => answers() === 1);
    await new Promise((r) => setTimeout(r, 6_000));
    expect(ended).toBe(false);
    socket.write(request);
    await until(() => answers() === 2 || ended);
    expect(answers()).toBe(2);
    socket.destroy();
  }, 30_000);
});
