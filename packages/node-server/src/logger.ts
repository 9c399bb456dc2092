/**
 * Structured JSON logs on stdout (pino): one line per request at info, errors with their code.
 *
 * Lines are written in batches by pino's own asynchronous destination (sonic-boom): once 1 KiB is pending, and at
 * the latest every 50 ms; pino flushes what is pending when the process exits. One write(2) per request line was a
 * large share of a check's CPU under load.
 */
import { type Logger, pino } from "pino";
import type { LogLevel } from "./config.ts";

/**
 * Pending bytes before a write (about 8 access lines). Not more: sonic-boom measures the pending text's byte
 * length on every write, so a line costs more the larger the batch (pino.info to /dev/null, one process:
 * ~1.6 us per line at 1 KiB, ~4-5 us at 4 KiB).
 */
const BATCH_BYTES = 1024;
/** Longest a logged line waits for its write. */
const FLUSH_MS = 50;

export interface ServerLogger {
  logger: Logger;
  /** Writes what is pending and stops the batch timer (stdout and stderr stay open). */
  close(): Promise<void>;
}

export function createServerLogger(level: LogLevel, fd = 1, flushMs = FLUSH_MS): ServerLogger {
  const destination = pino.destination({
    dest: fd,
    sync: false,
    minLength: BATCH_BYTES,
    periodicFlush: flushMs,
  });
  const logger = pino({ level, base: { service: "pemba" } }, destination);
  return {
    logger,
    close: () =>
      new Promise<void>((resolve) => {
        destination.once("close", () => resolve());
        destination.end();
      }),
  };
}
