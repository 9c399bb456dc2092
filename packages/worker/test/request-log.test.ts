/**
 * The request log line and PEMBA_LOG_LEVEL (plain unit tests, no workerd; the lines' figures in workerd are
 * edge-requests.test.ts's): `info` and below write a line for every request, `warn` for failed ones (status >= 400)
 * only, `error`, `fatal` and `silent` none; the line's content does not depend on the level.
 */
import type { LogLevel } from "@pemba/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { countQuery, loggedRequest, observeRequest, writesAt } from "../src/request-log.ts";

const ROUTE = "/v1/tenants/:tenant_id/permissions/check";
const check = () => new Request("http://worker.test/v1/tenants/t1/permissions/check", { method: "POST" });

/** Answers `status` after one statement, as a check observed by the app. */
const answer = (status: number) => async () => {
  countQuery("freshness", 0.001, 1);
  observeRequest({
    method: "POST",
    route: ROUTE,
    status,
    seconds: 0.001,
    decision: status === 200 ? "CHECK_RESULT_ALLOWED" : undefined,
  });
  return new Response("{}", { status });
};

/** The lines console.log received while `statuses` were answered at `level`. */
async function linesAt(level: LogLevel | undefined, statuses: number[]): Promise<unknown[]> {
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  for (const status of statuses) {
    const res = await loggedRequest(
      check(),
      answer(status),
      undefined,
      level === undefined ? undefined : () => level,
    );
    expect(res.status).toBe(status);
  }
  const lines = log.mock.calls.map((args) => {
    expect(args).toHaveLength(1);
    const { ms, ...line } = JSON.parse(args[0] as string) as { ms: number };
    expect(typeof ms).toBe("number");
    return line;
  });
  log.mockRestore();
  return lines;
}

const line = (status: number) => ({
  method: "POST",
  route: ROUTE,
  status,
  ...(status === 200 ? { decision: "CHECK_RESULT_ALLOWED" } : {}),
  statements: 1,
  by_kind: { freshness: 1 },
  rows_read: 1,
});

afterEach(() => vi.restoreAllMocks());

describe("request log", () => {
  it("info (the default), debug and trace: a line for every request", async () => {
    for (const level of [undefined, "info", "debug", "trace"] as const) {
      expect(await linesAt(level, [200, 403, 200])).toEqual([line(200), line(403), line(200)]);
    }
  });

  it("a request no route matched: its line names the path asked for", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const request = new Request("http://worker.test/favicon.ico", { method: "GET" });
    await loggedRequest(request, async () => {
      observeRequest({ method: "GET", route: "notFound", path: "/favicon.ico", status: 404, seconds: 0.001 });
      return new Response("{}", { status: 404 });
    });
    const { ms: _ms, ...logged } = JSON.parse(log.mock.calls[0]![0] as string) as { ms: number };
    expect(logged).toEqual({
      method: "GET",
      route: "notFound",
      path: "/favicon.ico",
      status: 404,
      statements: 0,
      by_kind: {},
      rows_read: 0,
    });
  });

  it("warn: failed requests only (status >= 400), with the same content", async () => {
    expect(await linesAt("warn", [200, 403, 200, 500])).toEqual([line(403), line(500)]);
  });

  it("error, fatal and silent: no request line", async () => {
    for (const level of ["error", "fatal", "silent"] as const) {
      expect(await linesAt(level, [200, 403, 500])).toEqual([]);
    }
  });

  it("levels order as pino's", () => {
    expect(writesAt("info", "info")).toBe(true);
    expect(writesAt("trace", "info")).toBe(true);
    expect(writesAt("warn", "info")).toBe(false);
    expect(writesAt("warn", "warn")).toBe(true);
    expect(writesAt("error", "warn")).toBe(false);
    expect(writesAt("silent", "warn")).toBe(false);
  });
});
