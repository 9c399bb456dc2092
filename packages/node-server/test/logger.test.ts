import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createBatchedLogger, writeDigits, writeMs } from "../src/logger.ts";

describe("the batched stdout logger", () => {
  let dir: string;
  let file: string;
  let fd: number;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "pemba-logger-"));
    file = join(dir, "out.log");
    fd = openSync(file, "w");
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });
  const written = () => readFileSync(file, "utf8");

  it("request() writes the same bytes as pino's logger.info for the access line", () => {
    vi.spyOn(Date, "now").mockReturnValue(1795434874877);
    vi.spyOn(performance, "now").mockReturnValue(1000);
    const log = createBatchedLogger("info", fd);
    const route = "/v1/tenants/:tenant_id/permissions/check";
    log.request("POST", route, 200, 0.194);
    log.logger.info({ method: "POST", route, status: 200, ms: 0.194 }, "request");
    log.request("POST", route, 204, 12);
    log.logger.info({ method: "POST", route, status: 204, ms: 12 }, "request");
    log.close();
    const lines = written().split("\n");
    expect(lines).toEqual([
      `{"level":30,"time":1795434874877,"service":"pemba","method":"POST","route":"${route}","status":200,"ms":0.194,"msg":"request"}`,
      `{"level":30,"time":1795434874877,"service":"pemba","method":"POST","route":"${route}","status":200,"ms":0.194,"msg":"request"}`,
      `{"level":30,"time":1795434874877,"service":"pemba","method":"POST","route":"${route}","status":204,"ms":12,"msg":"request"}`,
      `{"level":30,"time":1795434874877,"service":"pemba","method":"POST","route":"${route}","status":204,"ms":12,"msg":"request"}`,
      "",
    ]);
  });

  it("request() stamps the wall clock as Date.now() reads it, and follows a step of the system clock", () => {
    const times = () =>
      written()
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { time: number }).time);
    const log = createBatchedLogger("info", fd);
    const before = Date.now();
    log.request("POST", "/r", 200, 1);
    const after = Date.now();
    log.flush();
    const [time] = times();
    expect(time).toBeGreaterThanOrEqual(before - 1);
    expect(time).toBeLessThanOrEqual(after);
    // the system clock is set an hour ahead: the next batch's first line shows it
    const real = Date.now.bind(Date);
    vi.spyOn(Date, "now").mockImplementation(() => real() + 3_600_000);
    const stepped = Date.now();
    log.request("POST", "/r", 200, 1);
    const steppedAfter = Date.now();
    log.close();
    const last = times()[1]!;
    expect(last).toBeGreaterThanOrEqual(stepped - 1);
    expect(last).toBeLessThanOrEqual(steppedAfter);
  });

  it("request() rounds ms to microseconds, printed as String() prints the rounded number", () => {
    vi.spyOn(Date, "now").mockReturnValue(1795434874877);
    vi.spyOn(performance, "now").mockReturnValue(1000);
    const log = createBatchedLogger("info", fd);
    log.request("POST", "/r", 200, 0.1234567);
    log.request("POST", "/r", 200, 2.0004999);
    log.close();
    expect(written()).toContain('"ms":0.123,"msg"');
    expect(written()).toContain('"ms":2,"msg"');
  });

  it("writes integers and durations as the bytes of String()", () => {
    const buf = Buffer.alloc(64);
    const digits = (n: number) => buf.toString("latin1", 3, writeDigits(buf, 3, n));
    const ms = (v: number) => buf.toString("latin1", 5, writeMs(buf, 5, v));
    for (const n of [
      0,
      7,
      10,
      99,
      200,
      999_999,
      1_000_000_000,
      1_000_000_007,
      999_999_999,
      1795434000000,
      1795434000009,
      1795434874877,
      1795435000000,
      Number.MAX_SAFE_INTEGER,
    ]) {
      expect(digits(n)).toBe(String(n));
    }
    const durations = [
      0,
      0.0004,
      0.0005,
      0.001,
      0.01,
      0.1,
      0.194,
      0.25,
      1,
      12,
      12.3,
      12.03,
      12.003,
      99.999,
      123456.789,
      -1,
      NaN,
      Infinity,
      1e13,
      2e18,
    ];
    let seed = 1;
    for (let i = 0; i < 20_000; i++) {
      seed = (Math.imul(seed, 48271) >>> 0) % 2147483647;
      durations.push((seed / 2147483647) * 10 ** (i % 9));
    }
    for (const v of durations) expect(ms(v)).toBe(String(Math.round(v * 1000) / 1000));
  });

  it("keeps other lines in order between access lines, UTF-8 and past the buffer's size", () => {
    vi.spyOn(Date, "now").mockReturnValue(1795434874877);
    vi.spyOn(performance, "now").mockReturnValue(1000);
    const log = createBatchedLogger("info", fd);
    const long = "é".repeat(9000);
    log.request("POST", "/a", 200, 1.5);
    log.logger.info({ text: "日本" }, "between");
    log.request("GET", "/b", 404, 0);
    log.logger.info({ long }, "long");
    for (let i = 0; i < 500; i++) log.request("POST", "/a", 200, i);
    log.close();
    const entries = written()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.length).toBe(504);
    expect(entries.slice(0, 4).map((e) => [e.msg, e.route, e.method, e.status, e.ms])).toEqual([
      ["request", "/a", "POST", 200, 1.5],
      ["between", undefined, undefined, undefined, undefined],
      ["request", "/b", "GET", 404, 0],
      ["long", undefined, undefined, undefined, undefined],
    ]);
    expect(entries[1]!.text).toBe("日本");
    expect(entries[3]!.long).toBe(long);
    expect(entries.slice(4).map((e) => e.ms)).toEqual(Array.from({ length: 500 }, (_, i) => i));
  });

  it("request() follows the logger's level", () => {
    const log = createBatchedLogger("warn", fd);
    log.request("POST", "/x", 200, 1);
    log.logger.warn({ status: 404 }, "request failed");
    log.logger.level = "info";
    log.request("POST", "/y", 200, 2);
    log.close();
    const entries = written()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.map((e) => [e.level, e.msg, e.route])).toEqual([
      [40, "request failed", undefined],
      [30, "request", "/y"],
    ]);
  });

  it("writes a batch after 50 ms, or at once from 4 KiB pending, in logging order", () => {
    vi.useFakeTimers();
    const log = createBatchedLogger("info", fd);
    log.logger.info("first");
    log.request("POST", "/r", 200, 1);
    expect(written()).toBe("");
    vi.advanceTimersByTime(49);
    expect(written()).toBe("");
    vi.advanceTimersByTime(1);
    expect(
      written()
        .split("\n")
        .map((l) => (l === "" ? "" : JSON.parse(l).msg)),
    ).toEqual(["first", "request", ""]);
    const before = written().length;
    const big = "x".repeat(5000);
    log.logger.info({ big }, "big");
    expect(written().length).toBeGreaterThan(before + 5000);
    log.close();
  });

  it("lines logged after close() are written at once", () => {
    const log = createBatchedLogger("info", fd);
    log.close();
    log.logger.info("late");
    expect(JSON.parse(written()).msg).toBe("late");
  });
});
