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

const expiresText = (ms: unknown): string =>
  ms === null || ms === undefined ? "" : `,"expires_at":"${formatRfc3339(Number(ms))}"`;

export const tupleLine = (t: Tuple): string =>
  tupleText(
    t.entity.type,
    t.entity.id,
    t.relation,
    t.subject.type,
    t.subject.id,
    t.subject.relation,
    t.expiresAt,
  );

/** A tuple line from its cells (an empty subject relation = a direct subject; expiry in ms or absent). */
function tupleText(
  entityType: string,
  entityId: string,
  relation: string,
  subjectType: string,
  subjectId: string,
  subjectRelation: string,
  expiresAt: unknown,
): string {
  const sr = subjectRelation ? `,"subject_relation":${q(subjectRelation)}` : "";
  return `{"type":"tuple","entity_type":${q(entityType)},"entity_id":${q(entityId)},"relation":${q(relation)},"subject_type":${q(subjectType)},"subject_id":${q(subjectId)}${sr}${expiresText(expiresAt)}}`;
}

export const attributeLine = (a: Attribute): string =>
  attributeText(a.entity.type, a.entity.id, a.attribute, a.value.type, q(a.value.data), a.expiresAt);

/** An attribute line from its cells; `valueJson` is the value's JSON text as JSON.stringify writes it. */
function attributeText(
  entityType: string,
  entityId: string,
  attribute: string,
  valueType: string,
  valueJson: string,
  expiresAt: unknown,
): string {
  return `{"type":"attribute","entity_type":${q(entityType)},"entity_id":${q(entityId)},"attribute":${q(attribute)},"value_type":${q(valueType)},"value":${valueJson}${expiresText(expiresAt)}}`;
}

export interface DumpCounts {
  tuples: number;
  attributes: number;
}

export class DumpWriter {
  readonly #crc32: Crc32;
  readonly #chunkBytes: number;
  readonly #utf8 = new TextEncoder();
  #pending = "";
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
    this.#pending += `${text}\n`;
    this.#lines++;
    return this.#pending.length >= this.#chunkBytes ? this.flush() : undefined;
  }

  tuple(t: Tuple): Uint8Array | undefined {
    this.counts.tuples++;
    return this.line(tupleLine(t));
  }

  attribute(a: Attribute): Uint8Array | undefined {
    this.counts.attributes++;
    return this.line(attributeLine(a));
  }

  /**
   * A page of a store's tuple cells (BulkExports: id first, then the key, then expires_at), as one chunk when
   * enough have gathered. The stored value of an attribute is already its JSON text, written as it is.
   */
  tupleCells(rows: unknown[][]): Uint8Array | undefined {
    for (const c of rows)
      this.#pending += `${tupleText(c[1] as string, c[2] as string, c[3] as string, c[4] as string, c[5] as string, c[6] as string, c[7])}\n`;
    this.counts.tuples += rows.length;
    this.#lines += rows.length;
    return this.#pending.length >= this.#chunkBytes ? this.flush() : undefined;
  }

  /** A page of a store's attribute cells (BulkExports), like tupleCells. */
  attributeCells(rows: unknown[][]): Uint8Array | undefined {
    for (const c of rows)
      this.#pending += `${attributeText(c[1] as string, c[2] as string, c[3] as string, c[4] as string, c[5] as string, c[6])}\n`;
    this.counts.attributes += rows.length;
    this.#lines += rows.length;
    return this.#pending.length >= this.#chunkBytes ? this.flush() : undefined;
  }

  /**
   * Lines a store wrote itself (LineExports), as they are: `bytes` holds whole or partial lines of `kind` rows (the
   * lines are counted by their newlines), after the lines gathered so far. Answers the chunks to write, in order.
   */
  rawLines(bytes: Uint8Array, kind: keyof DumpCounts): Uint8Array[] {
    const out: Uint8Array[] = [];
    const before = this.flush();
    if (before !== undefined) out.push(before);
    if (bytes.length === 0) return out;
    let lines = 0;
    for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) lines++;
    this.counts[kind] += lines;
    this.#lines += lines;
    this.#crc = this.#crc32(bytes, this.#crc);
    out.push(bytes);
    return out;
  }

  /** The gathered lines as bytes (each with its newline), counted into the checksum. */
  flush(): Uint8Array | undefined {
    if (this.#pending.length === 0) return undefined;
    const bytes = this.#utf8.encode(this.#pending);
    this.#pending = "";
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
