/**
 * The gRPC port under the server's load shedder (one count of requests in flight with the HTTP port, one lag
 * measure) and the native unary path's `grpc-timeout`: a shed call is answered at once with RESOURCE_EXHAUSTED
 * ERROR_CODE_RATE_LIMITED (health never), and a call past its deadline with DEADLINE_EXCEEDED while its request's
 * signal aborts.
 */
import { connect, createServer, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { type Answer, type ApiRequest, grpcTypeRegistry, type PembaApp } from "@pemba/core";
import { freePort } from "@pemba/core/testing/node";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { grpcTimeoutMs, unaryGrpcHandler } from "../src/grpc-unary.ts";
import { type RunningServer, startServer } from "../src/index.ts";
import { checkBody, writeSchema } from "./api-client.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const service = (name: string) => grpcTypeRegistry.getService(name)!;
type Unary = (request: object, options?: { signal?: AbortSignal; timeoutMs?: number }) => Promise<unknown>;
type Stream = (request: object, options?: { signal?: AbortSignal }) => AsyncIterable<unknown>;

const CHECK = {
  tenantId: "t1",
  metadata: { depth: 20 },
  entity: { type: "document", id: "1" },
  permission: "view",
  subject: { type: "user", id: "1" },
};

async function statusOf(call: Promise<unknown>): Promise<{ code: Code; message: string } | "ok"> {
  try {
    await call;
    return "ok";
  } catch (e) {
    if (!(e instanceof ConnectError)) throw e;
    return { code: e.code, message: e.rawMessage };
  }
}

function clients(address: string) {
  const transport = createGrpcTransport({ baseUrl: `http://${address}` });
  return {
    permission: createClient(service("base.v1.Permission"), transport) as unknown as Record<string, Unary>,
    watch: createClient(service("base.v1.Watch"), transport) as unknown as Record<string, Stream>,
    health: createClient(service("grpc.health.v1.Health"), transport) as unknown as Record<string, Unary>,
  };
}

const httpCheck = (url: string) =>
  fetch(`${url}/v1/tenants/t1/permissions/check`, {
    method: "POST",
    body: JSON.stringify(checkBody("document:1", "view", "user:1")),
  });

const servers: RunningServer[] = [];
afterAll(() => Promise.all(servers.map((s) => s.close())));

async function start(options: { shedLagMs: number; maxInFlight: number }) {
  const server = await startServer({
    database: "memory:",
    logger: pino({ level: "silent" }),
    grpcPort: await freePort(),
    ...options,
  });
  servers.push(server);
  await writeSchema(server.url);
  return server;
}

describe("the load shedder on the gRPC port", () => {
  it("counts calls in flight with HTTP requests: one more is RESOURCE_EXHAUSTED (health still answers)", async () => {
    const server = await start({ shedLagMs: 0, maxInFlight: 1 });
    const rpc = clients(server.grpcAddress!);
    expect(await rpc.permission.check!(CHECK)).toMatchObject({ can: 2 });

    // a watch stays open: the one request in flight
    const abort = new AbortController();
    const watching = (async () => {
      for await (const _ of rpc.watch.watch!({ tenantId: "t1", snapToken: "" }, { signal: abort.signal }));
    })().catch(() => undefined);
    let http = await httpCheck(server.url);
    for (let i = 0; i < 100 && http.status !== 429; i++) {
      await sleep(20);
      http = await httpCheck(server.url);
    }
    expect(http.status).toBe(429);
    expect(await statusOf(rpc.permission.check!(CHECK))).toEqual({
      code: Code.ResourceExhausted,
      message: "ERROR_CODE_RATE_LIMITED",
    });
    expect(await rpc.health.check!({ service: "" })).toMatchObject({ status: 1 });

    abort.abort();
    await watching;
    let after = await statusOf(rpc.permission.check!(CHECK));
    for (let i = 0; i < 100 && after !== "ok"; i++) {
      await sleep(20);
      after = await statusOf(rpc.permission.check!(CHECK));
    }
    expect(after).toBe("ok");
  });

  it("sheds while the event loop is behind, and serves again once it catches up", async () => {
    const server = await start({ shedLagMs: 100, maxInFlight: 0 });
    const rpc = clients(server.grpcAddress!);
    expect(await rpc.permission.check!(CHECK)).toMatchObject({ can: 2 });
    // hold the event loop 150 ms out of every ~150: it runs 100 ms and more behind on every sample
    const blocker = setInterval(() => {
      const end = performance.now() + 150;
      while (performance.now() < end);
    }, 1);
    await sleep(400);
    const shed = await statusOf(rpc.permission.check!(CHECK));
    const health = await statusOf(rpc.health.check!({ service: "" }));
    clearInterval(blocker);
    expect(shed).toEqual({ code: Code.ResourceExhausted, message: "ERROR_CODE_RATE_LIMITED" });
    expect(health).toBe("ok");
    await sleep(100);
    expect(await rpc.permission.check!(CHECK)).toMatchObject({ can: 2 });
  });
});

describe("grpc-timeout on the native unary path", () => {
  it("reads the spec's units", () => {
    expect(grpcTimeoutMs("100m")).toBe(100);
    expect(grpcTimeoutMs("2S")).toBe(2000);
    expect(grpcTimeoutMs("1H")).toBe(3_600_000);
    expect(grpcTimeoutMs("3M")).toBe(180_000);
    expect(grpcTimeoutMs("5000u")).toBe(5);
    expect(grpcTimeoutMs("1000000n")).toBe(1);
    for (const bad of [undefined, "", "m", "10", "10x", "-5m", "123456789m"])
      expect(grpcTimeoutMs(bad)).toBeUndefined();
  });

  it("answers DEADLINE_EXCEEDED at the deadline and aborts the request's signal (the check and the general path)", async () => {
    // an app whose answers never come: only the deadline can end the call
    const requests: ApiRequest[] = [];
    const app = {
      handle: (_route: unknown, req: ApiRequest): Promise<Answer> => {
        requests.push(req);
        void req.signal; // a handler that stops on the signal asks for it
        return new Promise<Answer>(() => {});
      },
    } as unknown as PembaApp;
    const unary = unaryGrpcHandler(app, 1 << 20);
    const server = createServer();
    server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      if (!unary(stream, headers)) stream.respond({ ":status": 404 }, { endStream: true });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    // a raw HTTP/2 client that sends grpc-timeout and keeps no deadline of its own: what it gets is the server's
    const session = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const call = (path: string, desc: string, init: object) =>
      new Promise<IncomingHttpHeaders>((resolve, reject) => {
        const type = grpcTypeRegistry.getMessage(desc)!;
        const bytes = toBinary(type, create(type, init as never));
        const frame = Buffer.alloc(5 + bytes.length);
        frame.writeUInt32BE(bytes.length, 1);
        frame.set(bytes, 5);
        const req = session.request({
          ":method": "POST",
          ":path": path,
          "content-type": "application/grpc",
          te: "trailers",
          "grpc-timeout": "100m",
        });
        req.on("response", resolve);
        req.on("error", reject);
        req.end(frame);
      });
    try {
      const check = await call("/base.v1.Permission/Check", "base.v1.PermissionCheckRequest", CHECK);
      // the general path: a schema read goes through callUnary
      const read = await call("/base.v1.Schema/Read", "base.v1.SchemaReadRequest", {
        tenantId: "t1",
        metadata: {},
      });
      for (const headers of [check, read]) {
        expect([headers["grpc-status"], headers["grpc-message"]]).toEqual([
          String(Code.DeadlineExceeded),
          "deadline exceeded",
        ]);
      }
      expect(requests).toHaveLength(2);
      expect(requests[0]!.parsedBody).toEqual({
        meta: { schemaVersion: "", snapToken: "", depth: 20 },
        query: {
          entity: { type: "document", id: "1" },
          permission: "view",
          subject: { type: "user", id: "1", relation: "" },
        },
      });
      for (const req of requests) expect(req.signal?.aborted).toBe(true);
    } finally {
      session.close();
      server.close();
    }
  });
});
