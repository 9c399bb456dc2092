/**
 * `pemba import` reads a dump file on a worker thread (dump-read.ts): the records it yields, and the error a bad
 * line raises, are those of the reader on the calling thread (dumpRecords), chunk for chunk.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DumpLine, DumpWriter, headerLine, schemaLine } from "@pemba/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dumpRecordsThreaded } from "../src/commands/dump-read.ts";
import { packRecords, unpackRecords } from "../src/commands/dump-read-pack.ts";
import { dumpRecords } from "../src/commands/import.ts";

const SCHEMA =
  "entity user {}\nentity doc {\n  relation viewer @user @doc#viewer\n  attribute level integer\n}\n";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "pemba-dump-read-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A dump of `n` rows over several of the reader's 1 MB input chunks: expiring tuples, subject relations, attributes. */
function dumpText(n: number): string {
  const w = new DumpWriter();
  const dec = new TextDecoder();
  let text = dec.decode(
    w.header(
      headerLine({ tenant: "src", schema_version: "v1", snap_token: "", created_at: "2030-01-01T00:00:00Z" }),
    ),
  );
  const add = (b: Uint8Array | undefined) => {
    if (b) text += dec.decode(b);
  };
  add(w.line(schemaLine({ version: "v1", text: SCHEMA })));
  for (let i = 0; i < n; i++) {
    if (i % 10 === 9) {
      add(
        w.attribute({
          entity: { type: "doc", id: `d${i}` },
          attribute: "level",
          value: { type: "ATTRIBUTE_TYPE_INTEGER", data: i },
          ...(i % 20 === 9 ? { expiresAt: Date.UTC(2031, 0, 1) + i } : {}),
        }),
      );
      continue;
    }
    add(
      w.tuple({
        entity: { type: "doc", id: `d${i >> 2}` },
        relation: "viewer",
        subject:
          i % 7 === 0
            ? { type: "doc", id: `d${i}`, relation: "viewer" }
            : { type: "user", id: `u${i}`, relation: "" },
        ...(i % 13 === 0 ? { expiresAt: Date.UTC(2031, 0, 1) + i } : {}),
      }),
    );
  }
  add(w.finish());
  return text;
}

/** The records a reader yields, and the error it ends with (undefined when it ends cleanly). */
async function drain(it: AsyncIterable<DumpLine>): Promise<{ records: DumpLine[]; error?: unknown }> {
  const records: DumpLine[] = [];
  try {
    for await (const r of it) records.push(r);
    return { records };
  } catch (error) {
    return { records, error };
  }
}

describe("the dump read thread", () => {
  it("packs a chunk's records into columns and back to the same records", () => {
    const records: DumpLine[] = [
      {
        kind: "tuple",
        line: 3,
        tuple: {
          entity: { type: "doc", id: "a" },
          relation: "viewer",
          subject: { type: "user", id: "u", relation: "" },
        },
      },
      {
        kind: "attribute",
        line: 4,
        attribute: {
          entity: { type: "doc", id: "a" },
          attribute: "level",
          value: { type: "ATTRIBUTE_TYPE_INTEGER", data: 2 },
        },
      },
      {
        kind: "tuple",
        line: 5,
        tuple: {
          entity: { type: "doc", id: "b" },
          relation: "viewer",
          subject: { type: "doc", id: "a", relation: "viewer" },
          expiresAt: 1_900_000_000_000,
        },
      },
    ];
    const packed = packRecords(records);
    expect(packed.names).toEqual(["doc", "viewer", "user", ""]);
    expect(packed.ids).toEqual(["a", "u", "b", "a"]);
    expect(unpackRecords(structuredClone(packed, { transfer: packed.buffers }))).toEqual(records);
  });

  it("yields the calling thread's records of a dump over several input chunks, in line order", async () => {
    const file = join(dir, "whole.ndjson");
    writeFileSync(file, dumpText(30_000));
    const threaded = await drain(dumpRecordsThreaded(file));
    const inTurn = await drain(dumpRecords(file));
    expect(inTurn.error).toBeUndefined();
    expect(threaded.error).toBeUndefined();
    expect(threaded.records.length).toBe(30_003);
    expect(threaded.records).toEqual(inTurn.records);
  });

  it("ends with the calling thread's DumpFormatError, after the same records, for a bad line and a truncated file", async () => {
    const lines = dumpText(30_000).split("\n");
    lines[25_000] = '{"type":"tuple","entity_type":"doc","entity_id":"x"}';
    const bad = join(dir, "bad.ndjson");
    writeFileSync(bad, lines.join("\n"));
    const cut = join(dir, "cut.ndjson");
    writeFileSync(cut, lines.slice(0, 20_000).join("\n"));
    for (const file of [bad, cut]) {
      const threaded = await drain(dumpRecordsThreaded(file));
      const inTurn = await drain(dumpRecords(file));
      expect(inTurn.error).toBeInstanceOf(Error);
      expect(threaded.error).toEqual(inTurn.error);
      expect((threaded.error as Error).message).toBe((inTurn.error as Error).message);
      expect(threaded.error?.constructor).toBe(inTurn.error?.constructor);
      expect(threaded.records).toEqual(inTurn.records);
    }
  });

  it("stops its thread when the import leaves the loop early", async () => {
    const file = join(dir, "early.ndjson");
    writeFileSync(file, dumpText(30_000));
    let n = 0;
    for await (const _ of dumpRecordsThreaded(file)) if (++n === 10) break;
    expect(n).toBe(10);
  });
});
