import { beforeAll, describe, expect, it } from "vitest";
import { PembaService } from "../service/index.ts";
import { MemoryStore } from "../store/memory.ts";
import { createApp, type PembaApp } from "./app.ts";
import { checkPathTenant, utf8Length } from "./check-fast-fetch.ts";
import { TEST_SCHEMA, tuple } from "./testing/harness.ts";

describe("check fast path URL matching", () => {
  it("takes the tenant of POST /v1/tenants/<t>/permissions/check", () => {
    expect(checkPathTenant("http://127.0.0.1:3476/v1/tenants/t1/permissions/check")).toBe("t1");
    expect(checkPathTenant("https://h/v1/tenants/a.b@c:d/permissions/check?x=1")).toBe("a.b@c:d");
    expect(checkPathTenant("http://h/v1/tenants/a%40b/permissions/check")).toBe("a@b");
  });

  it("leaves every other URL to the router", () => {
    for (const url of [
      "http://h/v1/tenants//permissions/check",
      "http://h/v1/tenants/t1/permissions/check/",
      "http://h/v1/tenants/t1/permissions/bulk-check",
      "http://h/v1/tenants/a/b/permissions/check",
      "http://h/v2/tenants/t1/permissions/check",
      "http://h/v1/tenants/%E0%A4%A/permissions/check",
    ]) {
      expect(checkPathTenant(url)).toBeUndefined();
    }
  });
});

describe("utf8Length", () => {
  it("counts UTF-8 bytes like Buffer.byteLength, lone surrogates as U+FFFD", () => {
    for (const text of [
      "",
      '{"can":"CHECK_RESULT_ALLOWED","metadata":{"check_count":3}}',
      "é",
      "日本",
      "a😀b",
      "\ud83d",
      "\ude00x",
      "\ud83d\ud83d",
      "x\ud83d",
      "\u007f\u0080\u07ff\u0800\uffff",
    ]) {
      expect(utf8Length(text)).toBe(Buffer.byteLength(text, "utf8"));
    }
  });
});

describe("app.handleNodeCheck on (req, res) objects", () => {
  let app: PembaApp;
  let version: string;
  beforeAll(async () => {
    app = createApp({
      service: new PembaService(new MemoryStore()),
      cors: { origins: ["https://ui.example"] },
    });
    const post = (path: string, body: unknown) =>
      app.fetch(new Request(`http://h${path}`, { method: "POST", body: JSON.stringify(body) }));
    const schema = await post("/v1/tenants/t1/schemas/write", { schema: TEST_SCHEMA });
    version = ((await schema.json()) as { schema_version: string }).schema_version;
    await post("/v1/tenants/t1/data/write", {
      metadata: {},
      tuples: [tuple("document:1", "owner", "user:1")],
    });
  });

  interface Answer {
    status: number;
    headers: Record<string, string>;
    body: string;
    answered: [number, string][];
  }

  /** Drives handleNodeCheck with the body in the given chunks (bytes), like node:http's IncomingMessage. */
  function nodeCheck(chunks: Uint8Array[], headers: Record<string, string> = {}): Promise<Answer> {
    return new Promise((resolve) => {
      // biome-ignore lint/suspicious/noExplicitAny: one map for the data/end/error listeners
      const listeners = new Map<string, (arg?: any) => void>();
      const answer: Answer = { status: 0, headers: {}, body: "", answered: [] };
      const req = {
        method: "POST",
        url: "/v1/tenants/t1/permissions/check",
        rawHeaders: Object.entries(headers).flat(),
        // biome-ignore lint/suspicious/noExplicitAny: as IncomingMessage.on
        on(event: string, listener: (arg?: any) => void) {
          listeners.set(event, listener);
          return req;
        },
        off(event: string) {
          listeners.delete(event);
          return req;
        },
      };
      const res = {
        writeHead(status: number, h: string[]) {
          answer.status = status;
          expect(h.length % 2).toBe(0);
          for (let i = 0; i < h.length; i += 2) answer.headers[h[i]!] = h[i + 1]!;
        },
        end(body: string) {
          answer.body = body;
          setTimeout(() => resolve(answer), 0);
        },
      };
      const answered = (status: number, body: string, ms: number) => {
        expect(ms).toBeGreaterThanOrEqual(0);
        answer.answered.push([status, body]);
      };
      expect(app.handleNodeCheck(req, res, answered)).toBe(true);
      for (const chunk of chunks) listeners.get("data")!(chunk);
      listeners.get("end")!();
    });
  }

  const checkBody = (subject: string) =>
    JSON.stringify({
      metadata: { schema_version: version, snap_token: "", depth: 20 },
      entity: { type: "document", id: "1" },
      permission: "edit",
      subject: { type: "user", id: subject },
    });

  it("answers with a Content-Length of the body's bytes and reports status and body once", async () => {
    const a = await nodeCheck([Buffer.from(checkBody("1"))]);
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toEqual({
      can: "CHECK_RESULT_ALLOWED",
      metadata: { check_count: expect.any(Number) },
    });
    expect(a.headers).toEqual({
      "content-type": "application/json",
      "content-length": String(a.body.length),
    });
    expect(a.answered).toEqual([[200, a.body]]);
  });

  it("decodes a body split inside a multi-byte character like one chunk", async () => {
    const bytes = Buffer.from(checkBody("é😀"));
    const whole = await nodeCheck([bytes]);
    const at = bytes.indexOf(0xf0) + 2; // inside the 4-byte emoji
    const split = await nodeCheck([
      bytes.subarray(0, at),
      bytes.subarray(at, at + 1),
      bytes.subarray(at + 1),
    ]);
    expect(split).toEqual(whole);
    expect(whole.status).toBe(400);
    expect(whole.headers["content-length"]).toBe(String(Buffer.byteLength(whole.body)));
  });

  it("counts UTF-8 bytes of an error body and adds CORS headers for an allowed origin", async () => {
    const a = await nodeCheck([Buffer.from("{é")], { origin: "https://ui.example" });
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body)).toEqual({
      code: 3,
      message: "invalid character 'é' looking for beginning of value",
      details: [],
    });
    expect(a.headers).toEqual({
      "content-type": "application/json",
      "access-control-allow-origin": "https://ui.example",
      "access-control-allow-credentials": "true",
      vary: "Origin",
      "content-length": String(Buffer.byteLength(a.body)),
    });
    expect(Buffer.byteLength(a.body)).toBe(a.body.length + 1);
  });

  it("keeps a leading byte order mark (not JSON), an empty body is {}", async () => {
    const bom = await nodeCheck([Buffer.from(`\ufeff${checkBody("1")}`)]);
    expect(bom.status).toBe(400);
    expect(JSON.parse(bom.body)).toEqual({
      code: 3,
      message: "invalid character '\ufeff' looking for beginning of value",
      details: [],
    });
    const empty = await nodeCheck([]);
    expect(empty.status).toBe(400);
    expect(JSON.parse(empty.body).code).toBe(3);
  });
});
