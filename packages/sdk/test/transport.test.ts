/**
 * Timeouts, retries and error types against a scripted HTTP server (node:http on 127.0.0.1) that answers what
 * each test tells it to: the SDK's behaviour on 5xx, 429, 4xx, silence, aborts and refused connections.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createClient, PembaApiError, PembaConnectionError, PembaTimeoutError } from "../src/index.ts";

type Reply = (req: IncomingMessage, res: ServerResponse) => void;

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => {
  return (_req, res) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };
};
const ALLOWED = json(200, { can: "CHECK_RESULT_ALLOWED", metadata: { check_count: 1 } });
const UNAVAILABLE = json(503, { code: 14, message: "unavailable", details: [] });

describe("transport: retries, timeouts, typed errors", () => {
  let server: Server;
  let url = "";
  let script: Reply[] = [];
  let hits: string[] = [];
  let times: number[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(req.url ?? "");
      times.push(performance.now());
      req.resume();
      req.on("end", () =>
        (script.shift() ?? json(500, { code: 13, message: "script ran out", details: [] }))(req, res),
      );
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  });
  beforeEach(() => {
    script = [];
    hits = [];
    times = [];
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  const fast = { retries: 2, baseDelayMs: 1, maxDelayMs: 5 };
  const check = { entity: { type: "doc", id: "1" }, permission: "view", subject: { type: "user", id: "1" } };

  it("a read is retried on 503 and 429 and succeeds on the third attempt", async () => {
    script = [
      UNAVAILABLE,
      json(429, { code: 8, message: "slow down", details: [] }, { "retry-after": "0" }),
      ALLOWED,
    ];
    const client = createClient({ baseUrl: url, retry: fast, batchChecks: false });
    expect((await client.check(check)).can).toBe("CHECK_RESULT_ALLOWED");
    expect(hits).toEqual(Array(3).fill("/v1/tenants/t1/permissions/check"));
  });

  it("a read gives up after retries+1 attempts with the last answer's error", async () => {
    script = [UNAVAILABLE, UNAVAILABLE, UNAVAILABLE, ALLOWED];
    const client = createClient({ baseUrl: url, retry: fast, batchChecks: false });
    const error = await client.check(check).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PembaApiError);
    expect(error).toMatchObject({ status: 503, code: 14, message: "unavailable" });
    expect(hits).toHaveLength(3);
  });

  it("4xx answers and gRPC code 2 (missing bearer token) are not retried", async () => {
    script = [json(400, { code: 3, message: "bad", details: [] })];
    const client = createClient({ baseUrl: url, retry: fast, batchChecks: false });
    await expect(client.check(check)).rejects.toMatchObject({ status: 400, code: 3 });
    expect(hits).toHaveLength(1);
    script = [json(500, { code: 2, message: "ERROR_CODE_MISSING_BEARER_TOKEN", details: [] })];
    await expect(client.check(check)).rejects.toMatchObject({
      status: 500,
      code: 2,
      errorCode: "ERROR_CODE_MISSING_BEARER_TOKEN",
    });
    expect(hits).toHaveLength(2);
  });

  it("writes are not retried unless the client or the call asks", async () => {
    const tuples = [
      { entity: { type: "doc", id: "1" }, relation: "owner", subject: { type: "user", id: "1" } },
    ];
    script = [UNAVAILABLE, json(200, { snap_token: "AQ==" })];
    const client = createClient({ baseUrl: url, retry: fast });
    await expect(client.writeData({ tuples })).rejects.toMatchObject({ status: 503 });
    expect(hits).toHaveLength(1);
    script = [UNAVAILABLE, json(200, { snap_token: "Ag==" })];
    expect(await client.writeData({ tuples }, { retry: true })).toEqual({ snap_token: "Ag==" });
    expect(hits).toHaveLength(3);
    script = [UNAVAILABLE, json(200, { snap_token: "Aw==" })];
    const retrying = createClient({ baseUrl: url, retry: { ...fast, writes: true } });
    expect(await retrying.writeData({ tuples })).toEqual({ snap_token: "Aw==" });
    expect(hits).toHaveLength(5);
  });

  it("backoff: the wait is random below a ceiling that doubles per attempt, capped by maxDelayMs", async () => {
    script = [UNAVAILABLE, UNAVAILABLE, UNAVAILABLE, ALLOWED];
    const random = vi.spyOn(Math, "random").mockReturnValue(0.99);
    const client = createClient({
      baseUrl: url,
      retry: { retries: 3, baseDelayMs: 200, maxDelayMs: 500 },
      batchChecks: false,
    });
    const timers = vi.spyOn(globalThis, "setTimeout");
    expect((await client.check(check)).can).toBe("CHECK_RESULT_ALLOWED");
    // The waits between attempts are 0.99 x min(500, 200 x 2^attempt); other timers (each attempt's 10 s
    // timeout, fetch's own 3 s ones) are longer than maxDelayMs.
    const delays = timers.mock.calls
      .map((c) => c[1])
      .filter((ms) => typeof ms === "number" && ms > 0 && ms <= 500);
    expect(delays).toEqual([198, 396, 495]);
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(190);
    expect(times[3] - times[2]).toBeGreaterThanOrEqual(485);
    expect(random).toHaveBeenCalledTimes(3);
  });

  it("a 429's Retry-After is waited for (up to maxDelayMs)", async () => {
    script = [json(429, { code: 8, message: "slow down", details: [] }, { "retry-after": "1" }), ALLOWED];
    const client = createClient({
      baseUrl: url,
      retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 5000 },
      batchChecks: false,
    });
    expect((await client.check(check)).can).toBe("CHECK_RESULT_ALLOWED");
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(990);
  });

  it("a call past its timeout fails with PembaTimeoutError naming the URL and the limit", async () => {
    script = [() => {}]; // never answers
    const client = createClient({ baseUrl: url, timeoutMs: 150, retry: { retries: 0 }, batchChecks: false });
    const started = Date.now();
    const error = await client.check(check).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PembaTimeoutError);
    expect(error).toMatchObject({
      timeoutMs: 150,
      url: `${url}/v1/tenants/t1/permissions/check`,
      message: `no answer from ${url}/v1/tenants/t1/permissions/check within 150 ms`,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it("timeouts are retried for reads; a per-call timeout overrides the client's", async () => {
    script = [() => {}, ALLOWED];
    const client = createClient({ baseUrl: url, timeoutMs: 60_000, retry: fast, batchChecks: false });
    expect((await client.check(check, { timeoutMs: 100 })).can).toBe("CHECK_RESULT_ALLOWED");
    expect(hits).toHaveLength(2);
  });

  it("the caller's AbortSignal cancels the call with the signal's reason (not retried)", async () => {
    script = [() => {}, ALLOWED];
    const client = createClient({ baseUrl: url, retry: fast });
    const controller = new AbortController();
    const pending = client.check(check, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("user went away")), 50);
    await expect(pending).rejects.toThrow("user went away");
    expect(hits).toHaveLength(1);
    const aborted = AbortSignal.abort();
    await expect(client.check(check, { signal: aborted })).rejects.toMatchObject({ name: "AbortError" });
    expect(hits).toHaveLength(1);
  });

  it("a refused connection is a PembaConnectionError with the URL and the system error", async () => {
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, "127.0.0.1", done));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((done) => closed.close(done));
    const client = createClient({ baseUrl: `http://127.0.0.1:${port}/`, retry: fast, batchChecks: false });
    const error = await client.check(check).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PembaConnectionError);
    const target = `http://127.0.0.1:${port}/v1/tenants/t1/permissions/check`;
    expect((error as PembaConnectionError).url).toBe(target);
    expect((error as Error).message).toMatch(
      new RegExp(`^could not reach ${target}: fetch failed: .*ECONNREFUSED`),
    );
    expect((error as Error).cause).toBeInstanceOf(TypeError);
  });

  it("a non-JSON error body becomes the message; NDJSON stream errors are PembaApiErrors", async () => {
    script = [
      (_req, res) => {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end("Bad Gateway");
      },
    ];
    const client = createClient({ baseUrl: url, retry: { retries: 0 }, batchChecks: false });
    await expect(client.check(check)).rejects.toMatchObject({
      status: 502,
      code: 13,
      message: "Bad Gateway",
    });
    script = [
      (_req, res) => {
        res.writeHead(200, { "content-type": "application/x-ndjson" });
        res.write('{"result":{"entity_id":"1","continuous_token":""}}\n');
        res.end('{"error":{"code":5,"message":"ERROR_CODE_SCHEMA_NOT_FOUND","details":[]}}\n');
      },
    ];
    const seen: string[] = [];
    const error = await (async () => {
      for await (const r of client.lookupEntityStream({
        entity_type: "doc",
        permission: "view",
        subject: check.subject,
      })) {
        seen.push(r.entity_id);
      }
    })().catch((e: unknown) => e);
    expect(seen).toEqual(["1"]);
    expect(error).toBeInstanceOf(PembaApiError);
    expect(error).toMatchObject({ code: 5, errorCode: "ERROR_CODE_SCHEMA_NOT_FOUND" });
  });
});
