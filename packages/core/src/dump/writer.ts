/**
 * Writes a dump's lines as UTF-8 chunks (about `chunkBytes` each) with the running CRC-32 and line count the
 * trailer states. Line texts follow one key order, so the same rows always give the same bytes.
 */
import { formatRfc3339 } from "../expiry.ts";
import type { Attribute, Tuple } from "../model.ts";
import { type Crc32, crcHex, crc32 as jsCrc32 } from "./crc32.ts";
import { DUMP_FORMAT, DUMP_VERSION, type DumpHeader, type DumpSchemaRecord } from "./records.ts";

const q = JSON.stringify;

export function headerLine(h: Omit<DumpHeader, "type" | "format" | "version">): string {
  return `{"type":"header","format":"${DUMP_FORMAT}","version":${DUMP_VERSION},"tenant":${q(h.tenant)},"schema_version":${q(h.schema_version)},"snap_token":${q(h.snap_token)},"created_at":${q(h.created_at)}}`;
}

export const schemaLine = (s: Omit<DumpSchemaRecord, "type">): string =>
  `{"type":"schema","version":${q(s.version)},"text":${q(s.text)}}`;

export function tupleLine(t: Tuple): string {
  const relation = t.subject.relation ? `,"subject_relation":${q(t.subject.relation)}` : "";
  const expires = t.expiresAt === undefined ? "" : `,"expires_at":"${formatRfc3339(t.expiresAt)}"`;
  return `{"type":"tuple","entity_type":${q(t.entity.type)},"entity_id":${q(t.entity.id)},"relation":${q(t.relation)},"subject_type":${q(t.subject.type)},"subject_id":${q(t.subject.id)}${relation}${expires}}`;
}

export function attributeLine(a: Attribute): string {
  const expires = a.expiresAt === undefined ? "" : `,"expires_at":"${formatRfc3339(a.expiresAt)}"`;
  return `{"type":"attribute","entity_type":${q(a.entity.type)},"entity_id":${q(a.entity.id)},"attribute":${q(a.attribute)},"value_type":"${a.value.type}","value":${q(a.value.data)}${expires}}`;
}

export interface DumpCounts {
  tuples: number;
  attributes: number;
}

export class DumpWriter {
  readonly #crc32: Crc32;
  readonly #chunkBytes: number;
  readonly #utf8 = new TextEncoder();
  #pending: string[] = [];
  #pendingChars = 0;
  #crc = 0;
  #lines = 0;
  readonly counts: DumpCounts = { tuples: 0, attributes: 0 };

  constructor(opts: { crc32?: Crc32; chunkBytes?: number } = {}) {
    this.#crc32 = opts.crc32 ?? jsCrc32;
    this.#chunkBytes = opts.chunkBytes ?? 256 * 1024;
  }

  /**
   * The header line, as its own chunk: the first line, and outside the checksum (a round trip changes only the
   * header's snap token and time, so the rest of the file, trailer included, stays the same bytes).
   */
  header(text: string): Uint8Array {
    if (this.#lines !== 0) throw new Error("the header is the first line of a dump");
    this.#lines++;
    return this.#utf8.encode(`${text}\n`);
  }

  /** Adds a line; answers a chunk of bytes when enough have gathered, else undefined. */
  line(text: string): Uint8Array | undefined {
    this.#pending.push(text);
    this.#pendingChars += text.length + 1;
    this.#lines++;
    return this.#pendingChars >= this.#chunkBytes ? this.flush() : undefined;
  }

  tuple(t: Tuple): Uint8Array | undefined {
    this.counts.tuples++;
    return this.line(tupleLine(t));
  }

  attribute(a: Attribute): Uint8Array | undefined {
    this.counts.attributes++;
    return this.line(attributeLine(a));
  }

  /** The gathered lines as bytes (each with its newline), counted into the checksum. */
  flush(): Uint8Array | undefined {
    if (this.#pending.length === 0) return undefined;
    const bytes = this.#utf8.encode(`${this.#pending.join("\n")}\n`);
    this.#pending = [];
    this.#pendingChars = 0;
    this.#crc = this.#crc32(bytes, this.#crc);
    return bytes;
  }

  /** The rest of the lines and the trailer, as the last chunk. */
  finish(): Uint8Array {
    const rest = this.flush();
    const trailer = this.#utf8.encode(
      `{"type":"trailer","tuples":${this.counts.tuples},"attributes":${this.counts.attributes},"lines":${this.#lines},"crc32":"${crcHex(this.#crc)}"}\n`,
    );
    if (rest === undefined) return trailer;
    const out = new Uint8Array(rest.length + trailer.length);
    out.set(rest);
    out.set(trailer, rest.length);
    return out;
  }
}
