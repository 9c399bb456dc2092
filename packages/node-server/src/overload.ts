/**
 * Load shedding. When requests arrive faster than the process answers them, they queue in the event loop and every
 * answer gets later, until clients time out. Instead, while the event loop runs `shedLagMs` or more behind (a timer
 * every SAMPLE_MS measures how late it fires; two late samples in a row, so one long turn alone sheds nothing) or
 * `maxInFlight` requests are being answered, a new request is
 * answered at once, before its body is read, with 429 `ERROR_CODE_RATE_LIMITED` and `Retry-After: 1`: cheap, so
 * the requests already admitted finish and the lag falls again within a sample or two. `/healthz` and `/metrics`
 * are never shed (orchestrators and scrapers must see the process alive).
 *
 * The gRPC port's calls are judged by the same guard (one event loop, one count of requests in flight): a shed
 * native gRPC or gRPC-Web call is answered at once with status RESOURCE_EXHAUSTED (8, the code of the HTTP body)
 * and message ERROR_CODE_RATE_LIMITED, a Connect call with HTTP 429 (Connect's resource_exhausted). The health
 * service is never shed.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";

/** How often the event loop's lag is measured. */
const SAMPLE_MS = 20;

export interface OverloadGuard {
  /** Answers `req` with 429 and returns true when it is shed; else counts it in flight until it is answered. */
  shed(req: IncomingMessage, res: ServerResponse): boolean;
  /**
   * The same for a call on the gRPC port (any of its protocols): answers it and returns true when it is shed; else
   * counts it in flight until its stream closes.
   */
  shedStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): boolean;
  /** Requests shed so far. */
  readonly shedCount: number;
  close(): void;
}

const NEVER_SHED = new Set(["/healthz", "/metrics"]);
const NEVER_SHED_RPCS = new Set(["/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"]);
const RATE_LIMITED = "ERROR_CODE_RATE_LIMITED";

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
  const answered = () => {
    inFlight--;
  };
  const body = (reason: string) => JSON.stringify({ code: 8, message: RATE_LIMITED, details: [{ reason }] });
  /** Why a request is shed now; undefined when it is admitted. */
  const refusal = (): string | undefined => {
    // a lag is known once the late timer fires: the requests read in the same turn are judged by the last sample
    if (opts.shedLagMs > 0 && late >= 2)
      return `server overloaded: the event loop is ${Math.round(lagMs)} ms behind; retry after 1 s`;
    if (opts.maxInFlight > 0 && inFlight >= opts.maxInFlight)
      return `server overloaded: ${inFlight} requests in flight; retry after 1 s`;
    return undefined;
  };
  return {
    shed(req, res) {
      const reason = refusal();
      if (reason !== undefined && !NEVER_SHED.has(pathOf(req.url))) {
        shedCount++;
        res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
        res.end(body(reason));
        // the body is not read: Node drops it before the connection's next request
        req.resume();
        return true;
      }
      // requests in flight are counted only when they are limited ('close' is emitted once per response)
      if (opts.maxInFlight > 0) {
        inFlight++;
        res.on("close", answered);
      }
      return false;
    },
    shedStream(stream, headers) {
      const reason = refusal();
      if (reason !== undefined && !NEVER_SHED_RPCS.has(headers[":path"] ?? "")) {
        shedCount++;
        if (!stream.destroyed && !stream.closed) {
          const type = headers["content-type"] ?? "";
          if (type.startsWith("application/grpc")) {
            // native gRPC and gRPC-Web: the status alone, in the one header block
            stream.respond(
              {
                ":status": 200,
                "content-type": type.startsWith("application/grpc-web") ? type : "application/grpc",
                "grpc-status": "8",
                "grpc-message": RATE_LIMITED,
                "retry-after": "1",
              },
              { endStream: true },
            );
          } else {
            stream.respond({ ":status": 429, "content-type": "application/json", "retry-after": "1" });
            stream.end(JSON.stringify({ code: "resource_exhausted", message: RATE_LIMITED }));
          }
        }
        // the message is not read
        stream.resume();
        return true;
      }
      if (opts.maxInFlight > 0) {
        inFlight++;
        stream.on("close", answered);
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
