/**
 * The dump format and the import/export over a store: the bytes, the refusal of damaged files (naming the line),
 * and the import's semantics (touch, skip, fail, dry run, max errors, resume) on the memory store (the generic
 * path: reads and a write per chunk) and on SQLite (its own row-by-row path, BulkImports).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { PembaService } from "../service/pemba-service.ts";
import { PostgresStore } from "../store/drivers/postgres.ts";
import { SqliteStore } from "../store/drivers/sqlite.ts";
import { MemoryStore } from "../store/memory/memory-store.ts";
import type { Store } from "../store/store.ts";
import { type PostgresServer, startPostgres } from "../store/testing/postgres-server.ts";
import { crc32 } from "./crc32.ts";
import { exportDump } from "./export.ts";
import { DumpImport, type ImportOptions, type LineError } from "./import.ts";
import { DumpChecksumError, DumpFormatError, DumpFrameCheck, DumpReader, isGzip } from "./reader.ts";
import { dumpJsonSchema } from "./records.ts";

const SCHEMA = `entity user {}
entity team {
  relation member @user
}
entity doc {
  relation owner @user
  relation viewer @user @team#member
  attribute public boolean
  attribute tags string[]
  permission view = owner or viewer
}
`;

const dir = mkdtempSync(join(tmpdir(), "pemba-dump-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function bytesOf(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of chunks) out.push(Buffer.from(c));
  return Buffer.concat(out);
}

/** A tenant with a schema, tuples (one expiring, one with a subject relation) and attributes. */
async function seeded(store: Store): Promise<PembaService> {
  const service = new PembaService(store);
  const version = await service.writeSchema("t1", SCHEMA);
  const u = (id: string) => ({ type: "user", id, relation: "" });
  await service.writeData(
    "t1",
    version,
    [
      { entity: { type: "doc", id: "1" }, relation: "owner", subject: u("alice") },
      {
        entity: { type: "doc", id: "1" },
        relation: "viewer",
        subject: { type: "team", id: "a", relation: "member" },
      },
      {
        entity: { type: "doc", id: "2" },
        relation: "viewer",
        subject: u("bob"),
        expiresAt: Date.UTC(2031, 0, 2),
      },
      { entity: { type: "team", id: "a" }, relation: "member", subject: u("carol") },
    ],
    [
      {
        entity: { type: "doc", id: "1" },
        attribute: "public",
        value: { type: "ATTRIBUTE_TYPE_BOOLEAN", data: true },
      },
      {
        entity: { type: "doc", id: "2" },
        attribute: "tags",
        value: { type: "ATTRIBUTE_TYPE_STRING_ARRAY", data: ["a\tb", 'é\n"q"'] },
      },
    ],
  );
  return service;
}

const dumpOf = async (service: PembaService, now = Date.UTC(2030, 0, 1)) =>
  bytesOf((await exportDump(service, "t1", { now, pageSize: 2 })).chunks);

const lines = (b: Buffer) => b.toString("utf8").trimEnd().split("\n");
/** The dump without its header's snap token and time (what a round trip keeps). */
const body = (b: Buffer) => lines(b).slice(1).join("\n");

/** A dump of these lines (header first) with the trailer that fits them. */
function withTrailer(l: string[]): Buffer {
  const text = `${l.slice(1).join("\n")}\n`;
  const count = (type: string) => l.filter((x) => x.startsWith(`{"type":"${type}"`)).length;
  const crc = crc32(Buffer.from(text)).toString(16).padStart(8, "0");
  const trailer = `{"type":"trailer","tuples":${count("tuple")},"attributes":${count("attribute")},"lines":${l.length},"crc32":"${crc}"}`;
  return Buffer.from(`${l[0]}\n${text}${trailer}\n`);
}

async function importBytes(service: PembaService, bytes: Uint8Array, opts: ImportOptions = {}) {
  const reader = new DumpReader();
  const importer = new DumpImport(service, "t1", { chunkRows: 2, ...opts });
  for (const r of reader.push(bytes)) await importer.add(r);
  reader.end();
  await importer.flush();
  return importer;
}

describe("dump format", () => {
  it("export writes header, schema, tuples, attributes and a trailer whose checksum covers the lines between header and trailer", async () => {
    const service = await seeded(new MemoryStore());
    const bytes = await dumpOf(service);
    const l = lines(bytes);
    expect(JSON.parse(l[0]!)).toEqual({
      type: "header",
      format: "pemba-dump",
      version: 1,
      tenant: "t1",
      schema_version: expect.any(String),
      snap_token: expect.any(String),
      created_at: "2030-01-01T00:00:00.000Z",
    });
    expect(JSON.parse(l[1]!)).toMatchObject({ type: "schema", text: SCHEMA });
    expect(l.slice(2, 6).map((x) => JSON.parse(x))).toContainEqual({
      type: "tuple",
      entity_type: "doc",
      entity_id: "2",
      relation: "viewer",
      subject_type: "user",
      subject_id: "bob",
      expires_at: "2031-01-02T00:00:00.000Z",
    });
    expect(l.slice(2, 6).map((x) => JSON.parse(x))).toContainEqual({
      type: "tuple",
      entity_type: "doc",
      entity_id: "1",
      relation: "viewer",
      subject_type: "team",
      subject_id: "a",
      subject_relation: "member",
    });
    expect(JSON.parse(l[7]!)).toEqual({
      type: "attribute",
      entity_type: "doc",
      entity_id: "2",
      attribute: "tags",
      value_type: "ATTRIBUTE_TYPE_STRING_ARRAY",
      value: ["a\tb", 'é\n"q"'],
    });
    const before = Buffer.from(`${l.slice(1, 8).join("\n")}\n`);
    expect(JSON.parse(l[8]!)).toEqual({
      type: "trailer",
      tuples: 4,
      attributes: 2,
      lines: 8,
      crc32: crc32(before).toString(16).padStart(8, "0"),
    });
    expect(l).toHaveLength(9);
  });

  it("docs/dump.schema.json is the JSON schema the format's definition renders", () => {
    const file = JSON.parse(
      readFileSync(new URL("../../../../docs/dump.schema.json", import.meta.url), "utf8"),
    );
    expect(file).toEqual(dumpJsonSchema());
  });

  it("the reader takes the dump in chunks of any size, and the frame check agrees", async () => {
    const bytes = await dumpOf(await seeded(new MemoryStore()));
    for (const size of [1, 7, 64, bytes.length]) {
      const reader = new DumpReader();
      const kinds: string[] = [];
      const frame = new DumpFrameCheck();
      for (let i = 0; i < bytes.length; i += size) {
        const part = bytes.subarray(i, i + size);
        for (const r of reader.push(part)) kinds.push(r.kind);
        frame.push(part);
      }
      reader.end();
      expect(kinds).toEqual([
        "header",
        "schema",
        "tuple",
        "tuple",
        "tuple",
        "tuple",
        "attribute",
        "attribute",
        "trailer",
      ]);
      expect(frame.end()).toMatchObject({ tuples: 4, attributes: 2, lines: 8 });
    }
  });

  it("gzip is recognised by its first bytes", async () => {
    const bytes = await dumpOf(await seeded(new MemoryStore()));
    expect(isGzip(gzipSync(bytes))).toBe(true);
    expect(isGzip(bytes)).toBe(false);
  });

  const readAll = (bytes: Uint8Array) => {
    const reader = new DumpReader();
    reader.push(bytes);
    reader.end();
  };
  const frameOf = (bytes: Uint8Array) => {
    const f = new DumpFrameCheck();
    f.push(bytes);
    return f.end();
  };

  it("a truncated dump is refused, naming the last line it has", async () => {
    const bytes = await dumpOf(await seeded(new MemoryStore()));
    const l = lines(bytes);
    const cut = Buffer.from(`${l.slice(0, 5).join("\n")}\n`);
    expect(() => readAll(cut)).toThrow(
      "line 5: the file ends without its trailer: the dump is truncated after this line",
    );
    expect(() => frameOf(cut)).toThrow("line 5: the file ends without its trailer");
    const mid = bytes.subarray(0, Buffer.from(`${l.slice(0, 3).join("\n")}\n`).length + 10);
    expect(() => readAll(mid)).toThrow("line 4: the file ends inside this line: the dump is truncated");
    expect(() => readAll(Buffer.alloc(0))).toThrow("line 1: the file is empty");
  });

  it("a corrupted line is refused naming it; an altered value fails the checksum at the trailer", async () => {
    const bytes = await dumpOf(await seeded(new MemoryStore()));
    const l = lines(bytes);
    const broken = [...l];
    broken[3] = broken[3]!.slice(0, 20);
    expect(() => readAll(Buffer.from(`${broken.join("\n")}\n`))).toThrow(
      "line 4: not a JSON line: the file is corrupt",
    );
    const bad = [...l];
    bad[4] = bad[4]!.replace('"type":"tuple"', '"type":"tuple","extra":1');
    expect(() => readAll(Buffer.from(`${bad.join("\n")}\n`))).toThrow(
      'line 5: tuple record: unknown field "extra"',
    );
    const altered = [...l];
    altered[2] = altered[2]!.replace(/"entity_id":"(\d)"/, '"entity_id":"9"');
    const text = Buffer.from(`${altered.join("\n")}\n`);
    expect(() => readAll(text)).toThrow(
      /line 9: checksum mismatch \(trailer [0-9a-f]{8}, lines [0-9a-f]{8}\): the file was altered/,
    );
    expect(() => frameOf(text)).toThrow(DumpChecksumError);
    const dropped = [...l.slice(0, 3), ...l.slice(4)];
    expect(() => frameOf(Buffer.from(`${dropped.join("\n")}\n`))).toThrow(
      "line 8: the trailer counts 8 lines before it, the file has 7: lines are missing or added",
    );
    expect(() => readAll(Buffer.from(`${[...l, l[2]].join("\n")}\n`))).toThrow(
      "line 10: a line after the trailer",
    );
    const err = (() => {
      try {
        readAll(Buffer.from(`${broken.join("\n")}\n`));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(DumpFormatError);
    expect((err as DumpFormatError).line).toBe(4);
  });
});

let pgServer: PostgresServer | undefined;
let pgAdmin: pg.Pool | undefined;
let databases = 0;
const opened: Store[] = [];
afterAll(async () => {
  for (const store of opened) await store.close();
  await pgAdmin?.end();
  await pgServer?.stop();
});

/** A fresh database of each kind per call; PostgreSQL's server starts at its first. */
const stores: [string, () => Promise<Store>][] = [
  ["memory", async () => new MemoryStore()],
  ["sqlite", async () => SqliteStore.open(join(dir, `${databases++}.db`))],
  [
    "postgres",
    async () => {
      pgServer ??= await startPostgres();
      pgAdmin ??= new pg.Pool({ connectionString: pgServer.url, max: 1 });
      const name = `pemba_dump_${databases++}`;
      await pgAdmin.query(`CREATE DATABASE ${name}`);
      return PostgresStore.open(pgServer.url.replace(/\/postgres$/, `/${name}`));
    },
  ],
];

describe.each(stores)("import into %s", (_name, openStore) => {
  const open = async () => {
    const store = await openStore();
    opened.push(store);
    return store;
  };
  it("a round trip export -> import -> export gives the same bytes but the header's token and time", async () => {
    const source = await seeded(await open());
    const first = await dumpOf(source);
    const target = new PembaService(await open());
    const imported = await importBytes(target, first);
    expect(imported.counts).toEqual({ tuples: 4, attributes: 2, written: 6, unchanged: 0, errors: 0 });
    expect(imported.snapToken).not.toBe("");
    const second = await dumpOf(target, Date.UTC(2030, 5, 5));
    expect(body(second)).toBe(body(first));
    expect(JSON.parse(lines(second)[0]!).schema_version).toBe(JSON.parse(lines(first)[0]!).schema_version);
  });

  it("the store's cell export (BulkExports) writes the same bytes as the export through model rows", async () => {
    const service = await seeded(await open());
    const cells = await dumpOf(service);
    // the same store with exportPages hidden: exportDump falls back to the paged model reads
    const plain = new Proxy(service.store, {
      get: (target, key) => {
        if (key === "exportPages") return undefined;
        const v = Reflect.get(target, key, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const viaRows = await dumpOf(new PembaService(plain));
    expect(cells.toString("utf8")).toBe(viaRows.toString("utf8"));
    expect(lines(cells)).toHaveLength(9);
  });

  it("a re-run of the same dump writes nothing (no new snap) and counts every row unchanged", async () => {
    const first = await dumpOf(await seeded(await open()));
    const target = new PembaService(await open());
    await importBytes(target, first);
    const head = await target.store.headSnap("t1");
    for (const onConflict of ["touch", "skip", "fail"] as const) {
      const again = await importBytes(target, first, { onConflict });
      expect(again.counts).toEqual({ tuples: 4, attributes: 2, written: 0, unchanged: 6, errors: 0 });
      expect(again.snapToken).toBe("");
    }
    expect(await target.store.headSnap("t1")).toBe(head);
  });

  it("touch replaces a row whose value or expiry differs, skip keeps it, fail reports its line", async () => {
    const first = await dumpOf(await seeded(await open()));
    const edited = withTrailer(
      lines(first)
        .slice(0, -1)
        .map((x) =>
          x
            .replace('"value":true', '"value":false')
            .replace('"expires_at":"2031-01-02T00:00:00.000Z"', '"expires_at":"2032-01-02T00:00:00.000Z"'),
        ),
    );

    const skip = new PembaService(await open());
    await importBytes(skip, first);
    expect((await importBytes(skip, edited, { onConflict: "skip" })).counts).toMatchObject({
      written: 0,
      unchanged: 6,
    });
    expect(body(await dumpOf(skip))).toBe(body(first));

    const fail = new PembaService(await open());
    await importBytes(fail, first);
    const errors: LineError[] = [];
    await expect(
      importBytes(fail, edited, { onConflict: "fail", onLineError: (e) => void errors.push(e) }),
    ).rejects.toThrow(/line \d+: .*exists with another value or expiry/);
    const tolerant = await importBytes(fail, edited, {
      onConflict: "fail",
      maxErrors: 5,
      onLineError: (e) => void errors.push(e),
    });
    expect(tolerant.counts).toMatchObject({ written: 0, unchanged: 4, errors: 2 });
    expect(errors.slice(-2).map((e) => [e.line, e.code])).toEqual([
      [
        lines(edited).findIndex((x) =>
          x.includes('"entity_id":"2","relation":"viewer","subject_type":"user"'),
        ) + 1,
        "ERROR_CODE_ALREADY_EXIST",
      ],
      [lines(edited).findIndex((x) => x.includes('"attribute":"public"')) + 1, "ERROR_CODE_ALREADY_EXIST"],
    ]);
    expect(body(await dumpOf(fail))).toBe(body(first));

    const touch = new PembaService(await open());
    await importBytes(touch, first);
    expect((await importBytes(touch, edited, { onConflict: "touch" })).counts).toMatchObject({
      written: 2,
      unchanged: 4,
    });
    // the replaced rows are the newest, so they come last: the same rows in another order
    const rows = (b: Buffer) => lines(b).slice(2, -1).sort();
    expect(rows(await dumpOf(touch))).toEqual(rows(edited));
  });

  it("a chunk of several hundred rows, some the tenant has (the same or differing), is counted and written exactly", async () => {
    // 250 tuples and 250 attributes in one chunk: SQLite inserts them 100 a statement, so the rows the tenant has
    // fall inside full batches as well as in the rows after the last one
    const u = (id: string) => ({ type: "user", id, relation: "" });
    const tuple = (i: number, expiresAt?: number) => ({
      entity: { type: "doc", id: `d${i}` },
      relation: "viewer",
      subject: u(`u${i}`),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    });
    const attribute = (i: number, data: boolean) => ({
      entity: { type: "doc", id: `d${i}` },
      attribute: "public",
      value: { type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data },
    });
    const all = Array.from({ length: 250 }, (_, i) => i);
    const source = new PembaService(await open());
    const version = await source.writeSchema("t1", SCHEMA);
    await source.writeData(
      "t1",
      version,
      all.map((i) => tuple(i, i % 3 === 0 ? Date.UTC(2031, 0, 1) + i : undefined)),
      all.map((i) => attribute(i, i % 2 === 0)),
    );
    const first = await dumpOf(source);
    // the target has rows 0, 25, 50, ... as the dump has them and rows 5, 30, 55, ... with another expiry or value
    const same = all.filter((i) => i % 25 === 0);
    const differing = all.filter((i) => i % 25 === 5);
    const target = async () => {
      const service = new PembaService(await open());
      const v = await service.writeSchema("t1", SCHEMA);
      await service.writeData(
        "t1",
        v,
        [
          ...same.map((i) => tuple(i, i % 3 === 0 ? Date.UTC(2031, 0, 1) + i : undefined)),
          ...differing.map((i) => tuple(i, Date.UTC(2040, 0, 1))),
        ],
        [...same.map((i) => attribute(i, i % 2 === 0)), ...differing.map((i) => attribute(i, i % 2 !== 0))],
      );
      return service;
    };
    const rows = (b: Buffer) => lines(b).slice(2, -1).sort();
    const differingLines = lines(first)
      .map((x, n) => [x, n + 1] as const)
      .filter(([x]) => differing.some((i) => x.includes(`"entity_id":"d${i}",`)))
      .map(([, n]) => n);
    expect(differingLines).toHaveLength(20);

    const skip = await target();
    const before = rows(await dumpOf(skip));
    expect((await importBytes(skip, first, { onConflict: "skip", chunkRows: 1000 })).counts).toMatchObject({
      tuples: 250,
      attributes: 250,
      written: 460,
      unchanged: 40,
      errors: 0,
    });
    const kept = rows(await dumpOf(skip));
    expect(kept).toHaveLength(500);
    for (const x of before) expect(kept).toContain(x);

    const fail = await target();
    const errors: LineError[] = [];
    const failed = await importBytes(fail, first, {
      onConflict: "fail",
      chunkRows: 1000,
      maxErrors: 20,
      onLineError: (e) => void errors.push(e),
    });
    expect(failed.counts).toMatchObject({ written: 460, unchanged: 20, errors: 20 });
    expect(errors.map((e) => e.line)).toEqual(differingLines);
    expect(rows(await dumpOf(fail))).toEqual(kept);

    const touch = await target();
    expect((await importBytes(touch, first, { onConflict: "touch", chunkRows: 1000 })).counts).toMatchObject({
      written: 480,
      unchanged: 20,
      errors: 0,
    });
    expect(rows(await dumpOf(touch))).toEqual(rows(first));
    // a re-run writes nothing
    expect((await importBytes(touch, first, { onConflict: "touch", chunkRows: 1000 })).counts).toMatchObject({
      written: 0,
      unchanged: 500,
    });
  });

  it("rows that do not fit the schema are line errors, never written; over --max-errors the import stops", async () => {
    const first = await dumpOf(await seeded(await open()));
    const l = lines(first);
    const extra = [
      '{"type":"tuple","entity_type":"doc","entity_id":"3","relation":"editor","subject_type":"user","subject_id":"x"}',
      '{"type":"attribute","entity_type":"doc","entity_id":"3","attribute":"public","value_type":"ATTRIBUTE_TYPE_STRING","value":"yes"}',
    ];
    const bytes = withTrailer([...l.slice(0, 8), ...extra]);
    const target = new PembaService(await open());
    const errors: LineError[] = [];
    const done = await importBytes(target, bytes, { maxErrors: 2, onLineError: (e) => void errors.push(e) });
    expect(errors).toEqual([
      {
        line: 9,
        code: "ERROR_CODE_RELATION_DEFINITION_NOT_FOUND",
        message: "ERROR_CODE_RELATION_DEFINITION_NOT_FOUND",
      },
      { line: 10, code: "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH", message: "ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH" },
    ]);
    expect(done.counts).toEqual({ tuples: 5, attributes: 3, written: 6, unchanged: 0, errors: 2 });
    const strict = new PembaService(await open());
    await expect(importBytes(strict, bytes, { maxErrors: 1 })).rejects.toThrow(
      "line 10: ERROR_CODE_ATTRIBUTE_TYPE_MISMATCH; 2 line error(s), more than --max-errors 1",
    );
  });

  it("a dry run checks everything and writes nothing", async () => {
    const first = await dumpOf(await seeded(await open()));
    const target = new PembaService(await open());
    const before = await target.store.headSnap("t1");
    const checked = await importBytes(target, first, { dryRun: true });
    expect(checked.counts).toEqual({ tuples: 4, attributes: 2, written: 6, unchanged: 0, errors: 0 });
    expect(await target.store.headSnap("t1")).toBe(before);
    expect(await target.store.headSchema("t1")).toBeUndefined();
  });

  it("a resume after a checkpoint writes the lines after it and ends with exactly the source's rows", async () => {
    const first = await dumpOf(await seeded(await open()));
    const target = new PembaService(await open());
    const commits: { line: number }[] = [];
    await importBytes(target, first, { chunkRows: 2, onCommit: (p) => void commits.push(p) });
    expect(commits.map((c) => c.line)).toEqual([4, 6, 8]);
    // a second target that "crashed" after the first chunk: resumes after line 4 with that chunk's counts
    const resumed = new PembaService(await open());
    await importBytes(resumed, first, { chunkRows: 2, onCommit: (p) => void commits.push(p) });
    const again = await importBytes(resumed, first, {
      resumeAfterLine: 4,
      resumeCounts: { tuples: 2, attributes: 0, written: 2, unchanged: 0, errors: 0 },
    });
    expect(again.counts).toEqual({ tuples: 4, attributes: 2, written: 2, unchanged: 4, errors: 0 });
    expect(body(await dumpOf(resumed))).toBe(body(first));
  });
});

describe("import into an empty SQLite file (SqliteStore.bulkLoad)", () => {
  /** The file's indexes on tuples and attributes, and the definitions an import keeps while it has them dropped. */
  const indexesOf = (file: string) => {
    const db = new Database(file, { readonly: true });
    try {
      const deferred =
        db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'pemba_deferred_indexes'").get() === undefined
          ? []
          : (db.prepare("SELECT name FROM pemba_deferred_indexes ORDER BY name").all() as { name: string }[]);
      return {
        live: db
          .prepare(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('tuples', 'attributes') AND sql IS NOT NULL ORDER BY name",
          )
          .all() as { name: string; sql: string }[],
        deferred: deferred.map((r) => r.name),
      };
    } finally {
      db.close();
    }
  };
  const SECONDARY = [
    "attributes_created_idx",
    "attributes_deleted_idx",
    "attributes_entity_idx",
    "attributes_expires_idx",
    "tuples_created_idx",
    "tuples_deleted_idx",
    "tuples_entity_idx",
    "tuples_expires_idx",
    "tuples_subject_idx",
  ];

  it("drops the non-unique indexes for the load and builds the same ones after it; a file with rows keeps them", async () => {
    const file = join(dir, `bulk-${databases++}.db`);
    const store = SqliteStore.open(file);
    const migrated = indexesOf(file).live;
    expect(migrated.map((i) => i.name).filter((n) => !n.endsWith("_live_unique"))).toEqual(SECONDARY);
    store.bulkLoad();
    expect(indexesOf(file)).toEqual({
      live: migrated.filter((i) => i.name.endsWith("_live_unique")),
      deferred: SECONDARY,
    });
    const first = await dumpOf(await seeded(await SqliteStore.open(join(dir, `bulk-${databases++}.db`))));
    const service = new PembaService(store);
    const imported = await importBytes(service, first);
    expect(imported.counts).toEqual({ tuples: 4, attributes: 2, written: 6, unchanged: 0, errors: 0 });
    store.bulkLoadDone();
    expect(indexesOf(file)).toEqual({ live: migrated, deferred: [] });
    expect(body(await dumpOf(service))).toBe(body(first));
    // rows are there now: a second import's bulkLoad leaves the indexes alone
    store.bulkLoad();
    expect(indexesOf(file)).toEqual({ live: migrated, deferred: [] });
    await store.close();
  });

  it("a file left by an import killed before its indexes were built gets them back from whoever opens it next", async () => {
    const file = join(dir, `bulk-${databases++}.db`);
    const killed = SqliteStore.open(file);
    const migrated = indexesOf(file).live;
    killed.bulkLoad();
    const first = await dumpOf(await seeded(await SqliteStore.open(join(dir, `bulk-${databases++}.db`))));
    // chunks of 2 rows committed, then the process "dies": no bulkLoadDone, no close
    await importBytes(new PembaService(killed), first);
    expect(indexesOf(file).deferred).toEqual(SECONDARY);
    const next = SqliteStore.open(file);
    expect(indexesOf(file)).toEqual({ live: migrated, deferred: [] });
    expect(body(await dumpOf(new PembaService(next)))).toBe(body(first));
    await next.close();
    await killed.close();
    expect(indexesOf(file)).toEqual({ live: migrated, deferred: [] });
  });

  it("an import that stops on an error builds the indexes when the store closes", async () => {
    const file = join(dir, `bulk-${databases++}.db`);
    const store = SqliteStore.open(file);
    const migrated = indexesOf(file).live;
    store.bulkLoad();
    expect(indexesOf(file).deferred).toEqual(SECONDARY);
    await store.close();
    expect(indexesOf(file)).toEqual({ live: migrated, deferred: [] });
  });
});

describe("docs/DUMP.md", () => {
  it("its example is a whole dump every reader accepts", () => {
    const doc = readFileSync(new URL("../../../../docs/DUMP.md", import.meta.url), "utf8");
    const example = /```\n(\{"type":"header"[\s\S]*?)```/.exec(doc)![1]!;
    const reader = new DumpReader();
    expect(reader.push(Buffer.from(example)).map((r) => r.kind)).toEqual([
      "header",
      "schema",
      "tuple",
      "tuple",
      "attribute",
      "trailer",
    ]);
    reader.end();
  });
});
