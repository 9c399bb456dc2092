/**
 * Dump files on Node: an input (a path or `-` for stdin) as byte chunks, gunzipped when its first bytes are
 * gzip's; an output (a path, written beside it and renamed when complete, or stdout) with backpressure; the
 * checkpoint file of an import, replaced atomically (written beside it, then renamed).
 */

import { once } from "node:events";
import {
  createReadStream,
  createWriteStream,
  existsSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import type { Readable, Writable } from "node:stream";
import { createGunzip, createGzip, crc32 as zlibCrc32 } from "node:zlib";
import { type Crc32, crc32, type ImportCounts, isGzip } from "@pemba/core";
import { callerPath } from "./caller-path.ts";

/** zlib's native CRC-32 (Node 22.2+), else the JavaScript one: the same function. */
export const nativeCrc32: Crc32 = typeof zlibCrc32 === "function" ? (b, p) => zlibCrc32(b, p) : crc32;

const CHUNK = 1 << 20;

/** The input's bytes, decompressed when it is gzip. */
export async function* readInput(path: string): AsyncGenerator<Uint8Array> {
  const stream: Readable =
    path === "-" ? process.stdin : createReadStream(callerPath(path), { highWaterMark: CHUNK });
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first = await it.next();
  if (first.done) return;
  if (!isGzip(first.value)) {
    yield first.value;
    for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
    return;
  }
  const gunzip = createGunzip({ chunkSize: CHUNK });
  const feed = (async () => {
    try {
      for (let n: IteratorResult<Buffer> = first; !n.done; n = await it.next()) {
        if (!gunzip.write(n.value)) await once(gunzip, "drain");
      }
      gunzip.end();
    } catch (e) {
      gunzip.destroy(e as Error);
    }
  })();
  yield* gunzip as AsyncIterable<Buffer>;
  await feed;
}

/** Where an export goes: `-o` (gzip when it ends in .gz or `gzip` is set) or stdout. */
export class DumpOutput {
  readonly #path: string | undefined;
  readonly #sink: Writable;
  readonly #file: Writable | undefined;

  constructor(path: string | undefined, gzip: boolean) {
    this.#path = path === undefined || path === "-" ? undefined : callerPath(path);
    this.#file = this.#path === undefined ? undefined : createWriteStream(`${this.#path}.partial`);
    const target = this.#file ?? process.stdout;
    if (gzip || this.#path?.endsWith(".gz")) {
      const gz = createGzip({ level: 1 });
      gz.pipe(target);
      this.#sink = gz;
    } else this.#sink = target;
  }

  async write(bytes: Uint8Array): Promise<void> {
    if (!this.#sink.write(bytes)) await once(this.#sink, "drain");
  }

  /** Ends the stream; a file takes its name only now, complete. */
  async close(): Promise<void> {
    const done = this.#file ? once(this.#file, "close") : undefined;
    if (this.#sink !== process.stdout) this.#sink.end();
    await done;
    if (this.#path !== undefined) renameSync(`${this.#path}.partial`, this.#path);
  }

  /** After a failure: no half file under the name. */
  abort(): void {
    this.#sink.destroy();
    if (this.#path !== undefined) rmSync(`${this.#path}.partial`, { force: true });
  }
}

/** What an import's checkpoint file holds: which dump, the last line written, the counts so far. */
export interface Checkpoint {
  dump: { tenant: string; snap_token: string; created_at: string };
  tenant: string;
  line: number;
  counts: ImportCounts;
  snap_token: string;
}

export function readCheckpoint(path: string): Checkpoint | undefined {
  const file = callerPath(path);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as Checkpoint;
}

export function writeCheckpoint(path: string, c: Checkpoint): void {
  const file = callerPath(path);
  writeFileSync(`${file}.tmp`, `${JSON.stringify(c)}\n`);
  renameSync(`${file}.tmp`, file);
}

export const removeCheckpoint = (path: string): void => rmSync(callerPath(path), { force: true });
