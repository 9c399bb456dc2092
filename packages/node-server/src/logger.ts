/**
 * Structured JSON logs on stdout (pino): one line per request at info, errors with their code.
 *
 * Lines are batched: they are written to stdout (synchronously, one write per batch) once 4 KiB are pending or at
 * the latest 50 ms after they were logged, and whatever is pending is written when the process exits (also on
 * `process.exit` and uncaught errors; only SIGKILL can lose the last 50 ms). One write(2) per request line was a
 * large share of a check's CPU under load; the lines, their order and their content are unchanged.
 *
 * `request()` writes the access line of a successful request without pino's generic serializer (the same bytes
 * pino writes for `logger.info({ method, route, status, ms }, "request")`; a test compares them).
 */
import { writeSync } from "node:fs";
import { type DestinationStream, type Logger, pino } from "pino";
import type { LogLevel } from "./config.ts";

/** Pending characters before a write; below sonic-boom's 16 KiB write size. */
const BATCH_CHARS = 4096;
/** Longest a logged line waits for its write. */
const FLUSH_MS = 50;
/** pino's numeric value of `info`. */
const INFO = 30;

export interface BatchedLogger {
  logger: Logger;
  /**
   * Logs `{ method, route, status, ms }` with message "request" at info, as `logger.info` would (a no-op when
   * info is disabled), with `ms` rounded to microseconds. `route` and `method` must be plain strings without
   * characters JSON escapes.
   */
  request(method: string, route: string, status: number, ms: number): void;
  /** Writes every pending line now. */
  flush(): void;
  /** Flushes and leaves the exit hook; lines logged afterwards are written at once (unbatched). */
  close(): void;
}

/** The flushes to run at process exit: one `exit` listener for all loggers of the process. */
const atExit = new Set<() => void>();
const flushAll = () => {
  for (const flush of atExit) flush();
};

/** Sleeps `ms` synchronously (a blocked stdout pipe: wait for the reader rather than spin). */
const sleepCell = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms: number) => Atomics.wait(sleepCell, 0, 0, ms);

/** Writes all of `text` to `fd`: one write(2) as a rule, retrying partial writes and EAGAIN (a full pipe). */
export function writeFully(fd: number, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
      sleep(1);
    }
  }
}

/** The digits of an epoch-milliseconds time, as String(ms) (the leading digits converted once per 1,000 s). */
let timeBase = 0;
let timeHead = "";
export function timeText(now: number): string {
  let rest = now - timeBase;
  if (timeHead === "" || rest < 0 || rest >= 1_000_000) {
    if (!Number.isSafeInteger(now) || now < 1_000_000) return String(now);
    timeBase = now - (now % 1_000_000);
    timeHead = String(timeBase / 1_000_000);
    rest = now - timeBase;
  }
  const digits =
    rest < 10
      ? "00000"
      : rest < 100
        ? "0000"
        : rest < 1000
          ? "000"
          : rest < 10_000
            ? "00"
            : rest < 100_000
              ? "0"
              : "";
  return timeHead + digits + rest;
}

/**
 * A duration in ms rounded to microseconds, printed as String(Math.round(ms * 1000) / 1000) prints it (integer
 * arithmetic instead of a double-to-text conversion).
 */
export function msText(ms: number): string {
  const us = Math.round(ms * 1000);
  if (!(us >= 0 && us < 1e15)) return String(us / 1000);
  const whole = Math.floor(us / 1000);
  const frac = us - whole * 1000;
  if (frac === 0) return String(whole);
  const digits =
    frac % 10 !== 0
      ? (frac < 10 ? "00" : frac < 100 ? "0" : "") + frac
      : frac % 100 !== 0
        ? (frac < 100 ? "0" : "") + frac / 10
        : String(frac / 100);
  return `${whole}.${digits}`;
}

export function createBatchedLogger(level: LogLevel, fd = 1): BatchedLogger {
  let pending = "";
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const flush = () => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (pending === "") return;
    const text = pending;
    pending = "";
    try {
      writeFully(fd, text);
    } catch {
      // Closed or broken stdout: nothing to do about it here.
    }
  };
  const write = (line: string) => {
    pending += line;
    if (closed || pending.length >= BATCH_CHARS) flush();
    else if (timer === undefined) {
      // Armed by the first line after a write, so an idle server does not wake up for its logs.
      timer = setTimeout(flush, FLUSH_MS);
      timer.unref();
    }
  };
  const stream: DestinationStream = { write };
  const logger = pino({ level, base: { service: "pemba" } }, stream);
  if (atExit.size === 0) process.on("exit", flushAll);
  atExit.add(flush);
  return {
    logger,
    request(method, route, status, ms) {
      if (logger.levelVal > INFO) return;
      write(
        `{"level":30,"time":${timeText(Date.now())},"service":"pemba","method":"${method}","route":"${route}","status":${status},"ms":${msText(ms)},"msg":"request"}\n`,
      );
    },
    flush,
    close() {
      closed = true;
      flush();
      atExit.delete(flush);
      if (atExit.size === 0) process.off("exit", flushAll);
    },
  };
}
