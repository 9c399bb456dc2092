/**
 * A dump file's records, read and checked on a worker thread (dump-read-thread.ts): the same records, in the same
 * order, with the same DumpFormatError at the same line as dumpRecords on the calling thread, but the JSON parse and
 * the format's checks run beside the importing thread's writes instead of between them. Stdin stays on the calling
 * thread (dumpRecords). Leaving the loop early (an import that stops on an error) ends the thread.
 */
import { Worker } from "node:worker_threads";
import { DumpFormatError, type DumpLine } from "@pemba/core";
import { callerPath } from "./caller-path.ts";
import { type ReadMessage, unpackRecords } from "./dump-read-pack.ts";
import { DUMP_READ_THREAD_URL } from "./dump-read-thread-location.ts";

export async function* dumpRecordsThreaded(path: string): AsyncGenerator<DumpLine> {
  const worker = new Worker(DUMP_READ_THREAD_URL, {
    name: "pemba-dump-read",
    workerData: { path: callerPath(path) },
    // the thread holds a few input chunks and their records at a time: a small heap keeps the process's RSS low
    resourceLimits: { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 8 },
  });
  const queue: ReadMessage[] = [];
  let wake: (() => void) | undefined;
  let failed: Error | undefined;
  const arrived = () => {
    wake?.();
    wake = undefined;
  };
  worker.on("message", (m: ReadMessage) => {
    queue.push(m);
    arrived();
  });
  worker.on("error", (e) => {
    failed = e;
    arrived();
  });
  worker.on("exit", (code) => {
    failed ??= new Error(`the dump read thread exited (code ${code}) before the end of the dump`);
    arrived();
  });
  try {
    for (;;) {
      const m = queue.shift();
      if (m === undefined) {
        if (failed !== undefined) throw failed;
        await new Promise<void>((r) => (wake = r));
        continue;
      }
      if ("done" in m) return;
      if ("error" in m) {
        const { line, message } = m.error;
        throw line === undefined ? new Error(message) : new DumpFormatError(line, message);
      }
      worker.postMessage(1); // a credit: the thread may read one chunk further
      yield* unpackRecords(m.records);
    }
  } finally {
    worker.removeAllListeners();
    await worker.terminate();
  }
}
