/** A light HTTP/1.1 client for CPU benchmarks: pre-built check requests sent on raw keep-alive connections. */
import { connect, type Socket } from "node:net";
import { TENANT_ID } from "./seed.ts";

/** Pre-built check requests (the body of Permify's check script) with ids drawn uniformly from 0..ids-1. */
export function checkRequests(host: string, schemaVersion: string, ids: number, count = 4096): Buffer[] {
  const id = () => String(Math.floor(Math.random() * ids));
  return Array.from({ length: count }, () => {
    const body = JSON.stringify({
      metadata: { snap_token: "", schema_version: schemaVersion, depth: 20 },
      entity: { type: Math.random() < 0.5 ? "content" : "interaction", id: id() },
      permission: "view",
      subject: { type: "user", id: id() },
      page_size: 20,
    });
    return Buffer.from(
      `POST /v1/tenants/${TENANT_ID}/permissions/check HTTP/1.1\r\nHost: ${host}\r\n` +
        `User-Agent: bench-check-cpu\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
}

/**
 * One keep-alive connection: sends a request when free, reads the answer (status line, Content-Length, body).
 */
export class Connection {
  readonly #socket: Socket;
  busy = false;
  #buffer = "";
  onAnswer: (ok: boolean) => void = () => {};

  constructor(port: number) {
    this.#socket = connect(port, "127.0.0.1");
    this.#socket.setNoDelay(true);
    this.#socket.setEncoding("latin1");
    this.#socket.on("data", (text: string) => this.#read(text));
  }

  ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#socket.once("connect", resolve);
      this.#socket.once("error", reject);
    });
  }

  send(request: Buffer): void {
    this.busy = true;
    this.#socket.write(request);
  }

  #read(text: string): void {
    this.#buffer += text;
    for (;;) {
      const end = this.#buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = this.#buffer.slice(0, end);
      const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (this.#buffer.length < end + 4 + length) return;
      const body = this.#buffer.slice(end + 4, end + 4 + length);
      this.#buffer = this.#buffer.slice(end + 4 + length);
      this.busy = false;
      this.onAnswer(head.startsWith("HTTP/1.1 200") && body.includes("CHECK_RESULT_"));
    }
  }

  close(): void {
    this.#socket.destroy();
  }
}
