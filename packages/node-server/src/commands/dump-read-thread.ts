/**
 * The dump read thread's entry (started by dumpRecordsThreaded, dump-read.ts): reads a dump file, splits and checks
 * its lines (DumpReader: JSON parse, the format's fields, order, counts and checksum) and posts each input chunk's
 * records to the importing thread in a compact form (packRecords), so the parse runs beside the store's writes and
 * its garbage is collected on this thread's heap. It stays at most CREDITS messages ahead of the importing thread,
 * which answers each message it has taken with one credit, so a slow store keeps memory bounded. A dump that fails
 * the reader's checks ends the stream with the error as data (the records of the failing chunk are not posted,
 * as the single-thread reader does not return them either).
 */
import { parentPort, workerData } from "node:worker_threads";
import { DumpFormatError, DumpReader } from "@pemba/core";
import { nativeCrc32, readInput } from "./dump-files.ts";
import { packRecords, READ_CREDITS, type ReadMessage } from "./dump-read-pack.ts";

const port = parentPort!;
let credits = READ_CREDITS;
let wake: (() => void) | undefined;
port.on("message", () => {
  credits++;
  wake?.();
  wake = undefined;
});

const post = (m: ReadMessage, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

async function run(path: string): Promise<void> {
  const reader = new DumpReader({ crc32: nativeCrc32 });
  try {
    for await (const chunk of readInput(path)) {
      const records = reader.push(chunk);
      if (records.length === 0) continue;
      while (credits === 0) await new Promise<void>((r) => (wake = r));
      credits--;
      const packed = packRecords(records);
      post({ records: packed }, packed.buffers);
    }
    reader.end();
    post({ done: true });
  } catch (e) {
    if (e instanceof DumpFormatError)
      post({ error: { line: e.line, message: e.message.slice(`line ${e.line}: `.length) } });
    else post({ error: { message: e instanceof Error ? e.message : String(e) } });
  }
}

void run((workerData as { path: string }).path);
