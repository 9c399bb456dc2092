/**
 * Structured JSON logs on stdout (pino): one line per request at info, errors with their code.
 *
 * pino formats each line; the lines are written in batches by `LineBatch` (the destination pino writes to): one
 * write(2) per batch, at the latest every 50 ms or once 64 KiB are pending, and at exit. pino's own asynchronous
 * destination (sonic-boom) measures the pending text's byte length on every line and writes once 1 KiB is pending
 * (a thread-pool write per ~8 access lines); under a check load those writes were most of the log line's cost.
 */
import { closeSync, write, writeSync } from "node:fs";
import type { RequestInfo } from "@pemba/core";
import { type Logger, pino } from "pino";
import type { LogLevel } from "./config.ts";

/** Pending characters that start a write before the timer does (about 400 access lines). */
const BATCH_CHARS = 64 * 1024;
/** Longest a logged line waits for its write. */
const FLUSH_MS = 50;
/** How long a write that the file descriptor refused for now (EAGAIN: a full pipe) waits before it is tried again. */
const RETRY_MS = 10;

/**
 * A pino destination that keeps lines in memory and writes them in batches: `write` only appends (no system call,
 * no byte count); a batch is one asynchronous write of the lines joined, in order (the next batch starts when the
 * previous one is written whole). `flushSync` writes what is pending at once (process exit).
 */
export class LineBatch {
  readonly #fd: number;
  readonly #batchChars: number;
  #pending: string[] = [];
  #chars = 0;
  /** A batch is being written (partial writes and EAGAIN retries included). */
  #writing = false;
  readonly #timer: NodeJS.Timeout;
  #idle: (() => void)[] = [];
  #reported = false;

  constructor(fd: number, flushMs = FLUSH_MS, batchChars = BATCH_CHARS) {
    this.#fd = fd;
    this.#batchChars = batchChars;
    this.#timer = setInterval(() => this.flush(), flushMs);
    this.#timer.unref();
  }

  /** pino's write: one formatted line. */
  write(line: string): boolean {
    this.#pending.push(line);
    this.#chars += line.length;
    if (this.#chars >= this.#batchChars) this.flush();
    return true;
  }

  /** Starts writing what is pending (unless a batch is being written: it follows that one). */
  flush(): void {
    if (this.#writing) return;
    if (this.#pending.length === 0) {
      const idle = this.#idle;
      this.#idle = [];
      for (const resolve of idle) resolve();
      return;
    }
    const text = this.#pending.join("");
    this.#pending = [];
    this.#chars = 0;
    this.#writing = true;
    this.#writeAll(Buffer.from(text));
  }

  #writeAll(bytes: Buffer): void {
    write(this.#fd, bytes, 0, bytes.length, null, (error, written) => {
      if (error !== null) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EAGAIN" || code === "EBUSY") {
          setTimeout(() => this.#writeAll(bytes), RETRY_MS).unref();
          return;
        }
        // the batch is lost (stdout closed): said once on stderr, and logging goes on
        if (!this.#reported) {
          this.#reported = true;
          process.stderr.write(`pemba: writing the log failed: ${error.message}\n`);
        }
      } else if (written < bytes.length) {
        this.#writeAll(bytes.subarray(written));
        return;
      }
      this.#writing = false;
      // the next batch waits for the timer unless it is full already or `end` waits for it
      if (this.#chars >= this.#batchChars || this.#idle.length > 0) this.flush();
    });
  }

  /** Writes everything pending now, synchronously (at exit: no callback runs after it). */
  flushSync(): void {
    if (this.#pending.length === 0) return;
    let bytes = Buffer.from(this.#pending.join(""));
    this.#pending = [];
    this.#chars = 0;
    for (let tries = 0; bytes.length > 0 && tries < 1000; tries++) {
      try {
        bytes = bytes.subarray(writeSync(this.#fd, bytes));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EAGAIN") return;
      }
    }
  }

  /** Writes what is pending and stops the timer; resolves once every line is written. */
  end(): Promise<void> {
    clearInterval(this.#timer);
    return new Promise((resolve) => {
      this.#idle.push(resolve);
      this.flush();
    });
  }
}

export interface ServerLogger {
  logger: Logger;
  /** Logs a request's access line (see `requestLog`), on the same batches as `logger`. */
  logRequest(info: RequestInfo): void;
  /** Writes what is pending and stops the batch timer; a file descriptor other than stdout and stderr is closed. */
  close(): Promise<void>;
}

/** The fields pino puts on every line of the server's logger. */
const BASE = { service: "pemba" };

/**
 * The access line of every request: info when it succeeded; warn with the error's gRPC code and message.
 *
 * With `batch` (the destination `logger` writes to, as `createServerLogger` makes it), the info line of a request
 * that matched a route is formatted here, as pino would format `logger.info({method, route, status, ms},
 * "request")` (the same JSON, property by property: logger.test.ts compares the two), and appended to the batch:
 * one template string per request instead of pino's generic walk over the fields. Every other line (errors, a
 * request that matched no route, a logger given by the embedder) goes through pino.
 */
export function requestLog(logger: Logger, batch?: LineBatch): (info: RequestInfo) => void {
  /** `"method":"POST","route":"/v1/..."` per method and route, JSON-escaped once. */
  const heads = new Map<string, Map<string, string>>();
  const head = (method: string, route: string): string => {
    let byRoute = heads.get(method);
    if (byRoute === undefined) {
      byRoute = new Map();
      heads.set(method, byRoute);
    }
    let text = byRoute.get(route);
    if (text === undefined) {
      text = `,${JSON.stringify(BASE).slice(1, -1)},"method":${JSON.stringify(method)},"route":${JSON.stringify(route)}`;
      byRoute.set(route, text);
    }
    return text;
  };
  return (info) => {
    const ms = Math.round(info.seconds * 1000 * 1000) / 1000;
    if (info.status >= 400) {
      const entry = { method: info.method, route: info.route, path: info.path, status: info.status, ms };
      logger.warn({ ...entry, grpcCode: info.error?.code, error: info.error?.message }, "request failed");
      return;
    }
    if (batch === undefined || info.path !== undefined || !Number.isFinite(ms)) {
      logger.info(
        { method: info.method, route: info.route, path: info.path, status: info.status, ms },
        "request",
      );
      return;
    }
    // pino's level check (the level can be changed on the logger at run time)
    if (logger.levelVal > INFO) return;
    batch.write(
      `{"level":30,"time":${Date.now()}${head(info.method, info.route)},"status":${info.status},"ms":${ms},"msg":"request"}\n`,
    );
  };
}

const INFO = 30;

export function createServerLogger(level: LogLevel, fd = 1, flushMs = FLUSH_MS): ServerLogger {
  const batch = new LineBatch(fd, flushMs);
  const onExit = () => batch.flushSync();
  process.once("exit", onExit);
  const logger = pino({ level, base: BASE }, batch);
  return {
    logger,
    logRequest: requestLog(logger, batch),
    close: async () => {
      await batch.end();
      process.off("exit", onExit);
      if (fd > 2) closeSync(fd);
    },
  };
}
