/**
 * Structured JSON logs on stdout (pino): one line per request at info, errors with their code.
 *
 * Lines are written in batches by pino's own asynchronous destination (sonic-boom): once 4 KiB are pending, and at
 * the latest every 50 ms; pino flushes what is pending when the process exits. One write(2) per request line was a
 * large share of a check's CPU under load.
 */
import { type Logger, pino } from "pino";
import type { LogLevel } from "./config.ts";

/** Pending bytes before a write. */
const BATCH_BYTES = 4096;
/** Longest a logged line waits for its write. */
const FLUSH_MS = 50;

export interface ServerLogger {
  logger: Logger;
  /** Writes what is pending and stops the batch timer (stdout and stderr stay open). */
  close(): Promise<void>;
}

export function createServerLogger(level: LogLevel, fd = 1): ServerLogger {
  const destination = pino.destination({
    dest: fd,
    sync: false,
    minLength: BATCH_BYTES,
    periodicFlush: FLUSH_MS,
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
