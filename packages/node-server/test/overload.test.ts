/**
 * Load shedding: while the event loop runs behind (here a busy loop holds it, as a flood of requests would), new
 * requests are answered at once with 429 ERROR_CODE_RATE_LIMITED and Retry-After instead of queueing, /healthz keeps
 * answering, and requests are served again as soon as the loop catches up.
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../src/index.ts";
import { checkBody, writeSchema } from "./api-client.ts";

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({
    database: "memory:",
    logger: pino({ level: "silent" }),
    shedLagMs: 100,
    maxInFlight: 0,
  });
  await writeSchema(server.url);
});
afterAll(() => server?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const check = () =>
  fetch(`${server.url}/v1/tenants/t1/permissions/check`, {
    method: "POST",
    body: JSON.stringify(checkBody("document:1", "view", "user:1")),
  });

describe("overload", () => {
  it("sheds with 429 + Retry-After while the event loop is behind; /healthz answers; recovers once it catches up", async () => {
    expect((await check()).status).toBe(200);
    // hold the event loop 150 ms out of every ~150: it runs 100 ms and more behind on every sample
    const blocker = setInterval(() => {
      const end = performance.now() + 150;
      while (performance.now() < end);
    }, 1);
    await sleep(400);
    const shed = await check();
    const health = await fetch(`${server.url}/healthz`);
    clearInterval(blocker);
    expect(shed.status).toBe(429);
    expect(shed.headers.get("retry-after")).toBe("1");
    expect(await shed.json()).toEqual({
      code: 8,
      message: "ERROR_CODE_RATE_LIMITED",
      details: [
        {
          reason: expect.stringMatching(
            /^server overloaded: the event loop is \d+ ms behind; retry after 1 s$/,
          ),
        },
      ],
    });
    expect(health.status).toBe(200);
    // caught up: two samples on time and requests are answered again
    await sleep(100);
    const again = await check();
    expect(again.status).toBe(200);
    expect(((await again.json()) as { can: string }).can).toBe("CHECK_RESULT_DENIED");
  });

  it("one long turn alone sheds nothing", async () => {
    const end = performance.now() + 300;
    while (performance.now() < end);
    expect((await check()).status).toBe(200);
  });
});
