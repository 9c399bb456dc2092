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
   * info is disabled). `route` and `method` must be plain strings without characters JSON escapes.
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

export function createBatchedLogger(level: LogLevel, fd = 1): BatchedLogger {
  // minLength 0: every write() below goes out at once (writeSync, retrying EAGAIN and partial writes).
  const destination = pino.destination({ dest: fd, sync: true, minLength: 0 });
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
      destination.write(text);
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
        `{"level":30,"time":${Date.now()},"service":"pemba","method":"${method}","route":"${route}","status":${status},"ms":${ms},"msg":"request"}\n`,
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
