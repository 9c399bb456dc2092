/**
 * Load shedding. When requests arrive faster than the process answers them, they queue in the event loop and every
 * answer gets later, until clients time out. Instead, while the event loop runs `shedLagMs` or more behind (a timer
 * every SAMPLE_MS measures how late it fires; two late samples in a row, so one long turn alone sheds nothing) or
 * `maxInFlight` requests are being answered, a new request is
 * answered at once, before its body is read, with 429 `ERROR_CODE_RATE_LIMITED` and `Retry-After: 1`: cheap, so
 * the requests already admitted finish and the lag falls again within a sample or two. `/healthz` and `/metrics`
 * are never shed (orchestrators and scrapers must see the process alive).
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** How often the event loop's lag is measured. */
const SAMPLE_MS = 20;

export interface OverloadGuard {
  /** Answers `req` with 429 and returns true when it is shed; else counts it in flight until it is answered. */
  shed(req: IncomingMessage, res: ServerResponse): boolean;
  /** Requests shed so far. */
  readonly shedCount: number;
  close(): void;
}

const NEVER_SHED = new Set(["/healthz", "/metrics"]);

const pathOf = (url: string | undefined): string => {
  if (url === undefined) return "";
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
};

export function createOverloadGuard(opts: { shedLagMs: number; maxInFlight: number }): OverloadGuard {
  let lagMs = 0;
  /** Samples in a row at or over shedLagMs. */
  let late = 0;
  let inFlight = 0;
  let shedCount = 0;
  let expected = performance.now() + SAMPLE_MS;
  const timer =
    opts.shedLagMs > 0
      ? setInterval(() => {
          const now = performance.now();
          lagMs = Math.max(0, now - expected);
          late = lagMs >= opts.shedLagMs ? late + 1 : 0;
          expected = now + SAMPLE_MS;
        }, SAMPLE_MS)
      : undefined;
  timer?.unref();
  const body = (reason: string) =>
    JSON.stringify({ code: 8, message: "ERROR_CODE_RATE_LIMITED", details: [{ reason }] });
  return {
    shed(req, res) {
      // a lag is known once the late timer fires: the requests read in the same turn are judged by the last sample
      const lagging = opts.shedLagMs > 0 && late >= 2;
      const full = opts.maxInFlight > 0 && inFlight >= opts.maxInFlight;
      if ((lagging || full) && !NEVER_SHED.has(pathOf(req.url))) {
        shedCount++;
        const reason = lagging
          ? `server overloaded: the event loop is ${Math.round(lagMs)} ms behind; retry after 1 s`
          : `server overloaded: ${inFlight} requests in flight; retry after 1 s`;
        res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
        res.end(body(reason));
        // the body is not read: Node drops it before the connection's next request
        req.resume();
        return true;
      }
      // requests in flight are counted only when they are limited
      if (opts.maxInFlight > 0) {
        inFlight++;
        res.once("close", () => inFlight--);
      }
      return false;
    },
    get shedCount() {
      return shedCount;
    },
    close() {
      if (timer !== undefined) clearInterval(timer);
    },
  };
}
