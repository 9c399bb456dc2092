/** Structured JSON logs on stdout (pino): one line per request at info, errors with their code. */
import { type Logger, pino } from "pino";
import type { LogLevel } from "./config.ts";

export function createLogger(level: LogLevel): Logger {
  return pino({ level, base: { service: "pemba" } });
}
