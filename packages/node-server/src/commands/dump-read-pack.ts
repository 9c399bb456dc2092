/**
 * The compact form in which the dump read thread (dump-read-thread.ts) hands one input chunk's records to the
 * importing thread: tuples as columns (their names through a small per-message table, their ids as one string
 * array, their expiries in a Float64Array, transferred, not copied), every other record (header, schema, attribute,
 * trailer) as itself. A structured clone of a plain object per tuple would cost the importing thread about what the
 * JSON parse costs; columns cost it a few string copies per row.
 */
import type { DumpLine, Tuple } from "@pemba/core";

/** Messages the read thread may post ahead of the ones the importing thread has taken. */
export const READ_CREDITS = 2;

const TUPLE = 0;
const OTHER = 1;

export interface PackedRecords {
  /** The line of the first record; the chunk's records are consecutive lines. */
  firstLine: number;
  /** Per record: TUPLE or OTHER. */
  kinds: Uint8Array;
  /** The names of the tuples (types, relations, subject relations), each once. */
  names: string[];
  /** Per tuple, four indexes into `names`: entity type, relation, subject type, subject relation. */
  nameAt: Uint32Array;
  /** Per tuple: entity id, subject id. */
  ids: string[];
  /** Per tuple: its expiry in ms, NaN when it has none. */
  expiries: Float64Array;
  /** The records that are not tuples, in line order. */
  others: DumpLine[];
  buffers: ArrayBuffer[];
}

export type ReadMessage =
  | { records: PackedRecords }
  | { done: true }
  | { error: { line?: number; message: string } };

export function packRecords(records: DumpLine[]): PackedRecords {
  const kinds = new Uint8Array(records.length);
  let tupleCount = 0;
  for (const r of records) if (r.kind === "tuple") tupleCount++;
  const nameAt = new Uint32Array(tupleCount * 4);
  const expiries = new Float64Array(tupleCount);
  const ids = new Array<string>(tupleCount * 2);
  const names: string[] = [];
  const nameIndex = new Map<string, number>();
  const nameOf = (s: string): number => {
    let i = nameIndex.get(s);
    if (i === undefined) {
      i = names.length;
      names.push(s);
      nameIndex.set(s, i);
    }
    return i;
  };
  const others: DumpLine[] = [];
  let t = 0;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    if (r.kind !== "tuple") {
      kinds[i] = OTHER;
      others.push(r);
      continue;
    }
    kinds[i] = TUPLE;
    const x = r.tuple;
    nameAt[t * 4] = nameOf(x.entity.type);
    nameAt[t * 4 + 1] = nameOf(x.relation);
    nameAt[t * 4 + 2] = nameOf(x.subject.type);
    nameAt[t * 4 + 3] = nameOf(x.subject.relation ?? "");
    ids[t * 2] = x.entity.id;
    ids[t * 2 + 1] = x.subject.id;
    expiries[t] = x.expiresAt ?? Number.NaN;
    t++;
  }
  return {
    firstLine: records[0]?.line ?? 0,
    kinds,
    names,
    nameAt,
    ids,
    expiries,
    others,
    buffers: [kinds.buffer, nameAt.buffer, expiries.buffer],
  };
}

/** The records packRecords packed, in line order. */
export function unpackRecords(p: PackedRecords): DumpLine[] {
  const out = new Array<DumpLine>(p.kinds.length);
  const { names, nameAt, ids, expiries } = p;
  let t = 0;
  let o = 0;
  for (let i = 0; i < p.kinds.length; i++) {
    if (p.kinds[i] === OTHER) {
      out[i] = p.others[o++]!;
      continue;
    }
    const expiresAt = expiries[t]!;
    const tuple: Tuple = {
      entity: { type: names[nameAt[t * 4]!]!, id: ids[t * 2]! },
      relation: names[nameAt[t * 4 + 1]!]!,
      subject: {
        type: names[nameAt[t * 4 + 2]!]!,
        id: ids[t * 2 + 1]!,
        relation: names[nameAt[t * 4 + 3]!]!,
      },
    };
    if (!Number.isNaN(expiresAt)) tuple.expiresAt = expiresAt;
    out[i] = { kind: "tuple", line: p.firstLine + i, tuple };
    t++;
  }
  return out;
}
