import { spawnSync } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LOG_LEVEL_NUMBERS, type RequestInfo } from "@pemba/core";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createServerLogger, LineBatch, requestLog } from "../src/logger.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the server logger (pino, lines written in batches)", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  function open() {
    dir = mkdtempSync(join(tmpdir(), "pemba-log-"));
    const file = join(dir, "out.log");
    const fd = openSync(file, "w");
    const lines = () =>
      readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    return { fd, lines };
  }

  it("each level's number is pino's (the Worker's request lines filter by the same numbers)", () => {
    const { silent, ...levels } = LOG_LEVEL_NUMBERS;
    expect(levels).toEqual(pino.levels.values);
    expect(silent).toBe(Number.POSITIVE_INFINITY);
  });

  it("holds lines until a batch is due, then writes them in order within ~50 ms", async () => {
    const out = open();
    const { logger, close } = createServerLogger("info", out.fd);
    for (let i = 0; i < 3; i++) logger.info({ method: "POST", route: "/r", status: 200, ms: i }, "request");
    logger.debug({ hidden: true }, "below the level");
    expect(out.lines()).toEqual([]); // nothing written per line
    await sleep(200);
    expect(out.lines().map((l) => [l.level, l.service, l.msg, l.ms])).toEqual([
      [30, "pemba", "request", 0],
      [30, "pemba", "request", 1],
      [30, "pemba", "request", 2],
    ]);
    await close(); // flushes and closes the file
  });

  it("close() writes what is pending", async () => {
    const out = open();
    const { logger, close } = createServerLogger("info", out.fd);
    logger.warn({ status: 500 }, "request failed");
    await close();
    expect(out.lines().map((l) => [l.level, l.status, l.msg])).toEqual([[40, 500, "request failed"]]);
  });

  it("writes without waiting for the timer once 64 KiB are pending, in one batch", async () => {
    const out = open();
    const batch = new LineBatch(out.fd, 60_000); // no timer flush during the test
    const line = (i: number) => `${JSON.stringify({ i, text: "x".repeat(1000) }).padEnd(1023)}\n`; // 1024 chars
    for (let i = 0; i < 63; i++) batch.write(line(i));
    await sleep(50);
    expect(out.lines()).toEqual([]); // 63 KiB pending
    batch.write(line(63)); // 64 KiB: the batch starts
    batch.write(line(64)); // pending until the next batch
    for (let waited = 0; waited < 5000 && out.lines().length < 64; waited += 10) await sleep(10);
    expect(out.lines().map((l) => l.i)).toEqual([...Array(64).keys()]);
    await batch.end();
    expect(out.lines()).toHaveLength(65);
  });

  it("flushes what is pending when the process exits", async () => {
    const out = open();
    const script = [
      `const { createServerLogger } = await import(${JSON.stringify(new URL("../src/logger.ts", import.meta.url).href)});`,
      `const { logger } = createServerLogger("info", ${out.fd});`,
      `for (let i = 0; i < 3; i++) logger.info({ i }, "line");`,
      "process.exit(0);",
    ].join("\n");
    const child = spawnSync(
      process.execPath,
      ["--experimental-strip-types", "--no-warnings", "--input-type=module", "-e", script],
      {
        stdio: ["ignore", "inherit", "inherit", ...Array(out.fd - 2).fill("inherit")],
      },
    );
    expect(child.status).toBe(0);
    expect(out.lines().map((l) => l.i)).toEqual([0, 1, 2]);
  });

  it("a request's access line is the line pino writes for the same fields, and errors go through pino", async () => {
    const fast = open();
    const server = createServerLogger("info", fast.fd);
    const plainLines: string[] = [];
    const plain = pino(
      { level: "info", base: { service: "pemba" } },
      { write: (l: string) => plainLines.push(l) },
    );
    const infos: RequestInfo[] = [
      {
        method: "POST",
        route: "/v1/tenants/:tenant_id/permissions/check",
        status: 200,
        seconds: 0.000123456,
      },
      { method: "GET", route: "/healthz", status: 200, seconds: 0 },
      { method: "PATCH", route: 'a "quoted" \\ route\u0001', status: 301, seconds: 12.3456789 },
      { method: "POST", route: "/r", status: 200, seconds: 1e-9, decision: "CHECK_RESULT_ALLOWED" },
      {
        method: "GET",
        route: "notFound",
        path: "/nowhere",
        status: 404,
        seconds: 0.001,
        error: { code: 5, message: "Not Found", errorCode: "ERROR_CODE_NOT_FOUND" },
      },
      {
        method: "POST",
        route: "/r",
        status: 500,
        seconds: 0.5,
        error: { code: 13, message: "boom", errorCode: "ERROR_CODE_INTERNAL" },
      },
    ];
    for (const info of infos) {
      server.logRequest(info);
      requestLog(plain)(info);
    }
    await server.close();
    const withoutTime = (line: string) => line.replace(/"time":\d+/, '"time":0');
    const written = readFileSync(join(dir!, "out.log"), "utf8").split(/(?<=\n)/);
    expect(written.map(withoutTime)).toEqual(plainLines.map(withoutTime));
    expect(written.map((l) => JSON.parse(l).msg)).toEqual([
      ...Array(4).fill("request"),
      "request failed",
      "request failed",
    ]);
    expect(JSON.parse(written[0]!)).toMatchObject({ level: 30, service: "pemba", status: 200, ms: 0.123 });
    expect(JSON.parse(written[4]!)).toMatchObject({
      level: 40,
      path: "/nowhere",
      grpcCode: 5,
      error: "Not Found",
    });
  });

  it("the access line follows the logger's level", async () => {
    const out = open();
    const server = createServerLogger("warn", out.fd);
    server.logRequest({ method: "POST", route: "/r", status: 200, seconds: 0.001 });
    server.logger.level = "info";
    server.logRequest({ method: "POST", route: "/r", status: 201, seconds: 0.001 });
    await server.close();
    expect(out.lines().map((l) => l.status)).toEqual([201]);
  });
});
