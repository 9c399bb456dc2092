/**
 * Structured JSON logs on stdout (pino): one line per request at info, errors with their code.
 *
 * Lines are batched: they are written to stdout (synchronously, one write per batch) once 4 KiB are pending or at
 * the latest 50 ms after they were logged, and whatever is pending is written when the process exits (also on
 * `process.exit` and uncaught errors; only SIGKILL can lose the last 50 ms). One write(2) per request line was a
 * large share of a check's CPU under load; the lines, their order and their content are unchanged.
 *
 * Pending lines are kept as UTF-8 bytes in one buffer (no string concatenation to flatten and encode per batch).
 * `request()` writes the access line of a successful request straight into it as bytes, without pino's generic
 * serializer: the same bytes pino writes for `logger.info({ method, route, status, ms }, "request")` (a test
 * compares them).
 */
import { writeSync } from "node:fs";
import { type DestinationStream, type Logger, pino } from "pino";
import type { LogLevel } from "./config.ts";

/** Pending bytes before a write; below sonic-boom's 16 KiB write size. */
const BATCH_BYTES = 4096;
/** Room for pending lines: a batch plus the longest line written into the buffer (longer ones go out at once). */
const BUFFER_BYTES = 4 * BATCH_BYTES;
/** Longest a logged line waits for its write. */
const FLUSH_MS = 50;
/** pino's numeric value of `info`. */
const INFO = 30;
/** The `service` field of every line (pino's `base`). */
const SERVICE = "pemba";

export interface BatchedLogger {
  logger: Logger;
  /**
   * Logs `{ method, route, status, ms }` with message "request" at info, as `logger.info` would (a no-op when
   * info is disabled), with `ms` rounded to microseconds. `route` and `method` must be plain ASCII strings without
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

/** Writes `length` bytes of `bytes` to `fd`: one write(2) as a rule, retrying partial writes and EAGAIN (a full pipe). */
export function writeFully(fd: number, bytes: Uint8Array, length = bytes.length): void {
  let offset = 0;
  while (offset < length) {
    try {
      offset += writeSync(fd, bytes, offset, length - offset);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
      sleep(1);
    }
  }
}

/** Writes `n` (a non-negative integer below 1e9) as exactly `width` digits, zero-padded, at `at`; returns the end. */
function writeWidth(buf: Uint8Array, at: number, n: number, width: number): number {
  for (let i = at + width - 1; i >= at; i--) {
    buf[i] = 48 + (n % 10);
    n = (n / 10) | 0;
  }
  return at + width;
}

/** Writes the decimal digits of a non-negative safe integer at `at`, as String(n); returns the end. */
export function writeDigits(buf: Uint8Array, at: number, n: number): number {
  if (n >= 1e9) {
    // two int32-sized halves instead of floating-point division by 10 throughout
    const high = Math.floor(n / 1e9);
    return writeWidth(buf, writeDigits(buf, at, high), n - high * 1e9, 9);
  }
  let digits = 1;
  for (let rest = n; rest >= 10; rest = (rest / 10) | 0) digits++;
  return writeWidth(buf, at, n, digits);
}

/**
 * Writes a duration in ms rounded to microseconds as String(Math.round(ms * 1000) / 1000) prints it (integer
 * arithmetic instead of a double-to-text conversion); returns the end.
 */
export function writeMs(buf: Buffer, at: number, ms: number): number {
  const us = Math.round(ms * 1000);
  if (!(us >= 0 && us < 1e15)) return at + buf.write(String(us / 1000), at, "latin1");
  const whole = Math.floor(us / 1000);
  let frac = us - whole * 1000;
  at = writeDigits(buf, at, whole);
  if (frac === 0) return at;
  buf[at++] = 46; // "."
  // the fraction's digits without trailing zeros
  let digits = 3;
  while (frac % 10 === 0) {
    frac /= 10;
    digits--;
  }
  return writeWidth(buf, at, frac, digits);
}

/** Copies `bytes` into `buf` at `at`; returns the end. A loop: TypedArray.prototype.set is a builtin call with a
 * memmove, costly for the few dozen bytes of a line's fixed parts. */
function copyInto(buf: Uint8Array, at: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; i++) buf[at + i] = bytes[i];
  return at + bytes.length;
}

/**
 * The wall clock in ms as Date.now() reads it, from the monotonic clock: Date.now() is a V8 runtime call (~0.7 us
 * of a check's CPU under load), performance.now() a fast one. `syncClock` ties them again (after a step of the
 * system clock); the logger runs it before the first line of every batch.
 */
let clockOffset = performance.timeOrigin;
const wallClock = () => Math.floor(clockOffset + performance.now());
function syncClock(): void {
  const wall = Date.now();
  const estimate = clockOffset + performance.now();
  // Date.now() truncates: in step, the estimate is in [wall, wall + 1) (a little more for the time between reads)
  if (estimate < wall - 1 || estimate >= wall + 2) clockOffset += wall - estimate;
}

const ascii = (text: string): Uint8Array => Buffer.from(text, "latin1");
const LINE_START = ascii('{"level":30,"time":');
const LINE_END = ascii(',"msg":"request"}\n');
const MS_FIELD = ascii(',"ms":');
/** The longest status, ms and time digits of an access line (with room to spare). */
const NUMBERS_ROOM = 64;

export function createBatchedLogger(level: LogLevel, fd = 1): BatchedLogger {
  const buf = Buffer.allocUnsafe(BUFFER_BYTES);
  let used = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const flush = () => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (used === 0) return;
    const length = used;
    used = 0;
    try {
      writeFully(fd, buf, length);
    } catch {
      // Closed or broken stdout: nothing to do about it here.
    }
  };
  /** After a line was added: write now or arm the timer. */
  const added = () => {
    if (closed || used >= BATCH_BYTES) flush();
    else if (timer === undefined) {
      // Armed by the first line after a write, so an idle server does not wake up for its logs.
      timer = setTimeout(flush, FLUSH_MS);
      timer.unref();
    }
  };
  const write = (line: string) => {
    // at most 3 bytes per UTF-16 unit
    if (used + line.length * 3 > BUFFER_BYTES) {
      flush();
      if (line.length * 3 > BUFFER_BYTES) {
        try {
          writeFully(fd, Buffer.from(line, "utf8"));
        } catch {
          // as in flush
        }
        return;
      }
    }
    used += buf.write(line, used, "utf8");
    added();
  };
  const stream: DestinationStream = { write };
  const logger = pino({ level, base: { service: SERVICE } }, stream);
  if (atExit.size === 0) process.on("exit", flushAll);
  atExit.add(flush);

  // The bytes between the time and the status for the last (method, route) logged (the check route, as a rule),
  // and the room a line with them needs in the buffer.
  let lastMethod = "";
  let lastRoute = "";
  let middle = ascii("");
  let lineRoom = 0;
  return {
    logger,
    request(method, route, status, ms) {
      if (logger.levelVal > INFO) return;
      if (method !== lastMethod || route !== lastRoute) {
        middle = ascii(`,"service":"${SERVICE}","method":"${method}","route":"${route}","status":`);
        lastMethod = method;
        lastRoute = route;
        lineRoom = LINE_START.length + middle.length + MS_FIELD.length + LINE_END.length + NUMBERS_ROOM;
      }
      if (used + lineRoom > BUFFER_BYTES) flush();
      if (timer === undefined) syncClock(); // the first line since the last write
      let at = copyInto(buf, used, LINE_START);
      at = writeDigits(buf, at, wallClock());
      at = copyInto(buf, at, middle);
      at = writeDigits(buf, at, status);
      at = copyInto(buf, at, MS_FIELD);
      at = writeMs(buf, at, ms);
      used = copyInto(buf, at, LINE_END);
      added();
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
