/**
 * PostgreSQL's dump export (LineExports, postgres-export.ts): the lines the server writes in its COPY are the bytes
 * the export through cells (BulkExports) and through model rows writes, for every string JSON has to escape and
 * every expiry; a tenant with an expiry the server does not write is exported through cells; an export stopped
 * early gives its connection up.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportDump } from "../../dump/export.ts";
import type { Attribute, Tuple } from "../../model.ts";
import { PembaService } from "../../service/pemba-service.ts";
import { type PostgresServer, startPostgres } from "../testing/postgres-server.ts";
import { PostgresStore } from "./postgres.ts";

let server: PostgresServer;
let admin: pg.Pool;
let n = 0;
const opened: PostgresStore[] = [];

beforeAll(async () => {
  server = await startPostgres();
  admin = new pg.Pool({ connectionString: server.url, max: 1 });
});
afterAll(async () => {
  for (const s of opened) await s.close();
  await admin?.end();
  await server?.stop();
});

async function open(): Promise<PostgresStore> {
  const name = `pemba_export_${n++}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const store = await PostgresStore.open(server.url.replace(/\/postgres$/, `/${name}`));
  opened.push(store);
  return store;
}

/** The store with some members hidden (the export then takes its next path). */
function without<S extends object>(store: S, ...hidden: string[]): S {
  return new Proxy(store, {
    get: (target, key) => {
      if (typeof key === "string" && hidden.includes(key)) return undefined;
      const v = Reflect.get(target, key, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

async function dump(store: PostgresStore, opts: { snapToken?: string } = {}): Promise<string> {
  const started = await exportDump(new PembaService(store), "t1", {
    now: Date.UTC(2030, 0, 1),
    pageSize: 3,
    ...opts,
  });
  const out: Buffer[] = [];
  for await (const c of started.chunks) out.push(Buffer.from(c));
  return Buffer.concat(out).toString("utf8");
}

/** Every character class JSON escapes or passes, as ids, names and values (the store itself checks no pattern). */
const ODD = [
  'a"b',
  "back\\slash",
  "tab\there",
  "nl\nx",
  "cr\rx",
  "\b\f",
  "ctl\u0001\u001f",
  "é ü 漢 😀",
  "del\u007f",
  "\u2028",
];

const tuple = (i: number, s: string, expiresAt?: number): Tuple => ({
  entity: { type: "doc", id: `d${i}${s}` },
  relation: "viewer",
  subject:
    i % 2 === 0 ? { type: "user", id: `u${s}`, relation: "" } : { type: "team", id: s, relation: `m${s}` },
  ...(expiresAt === undefined ? {} : { expiresAt }),
});
const attribute = (i: number, s: string, expiresAt?: number): Attribute => ({
  entity: { type: "doc", id: `d${i}${s}` },
  attribute: `a${i}`,
  value:
    i % 3 === 0
      ? { type: "ATTRIBUTE_TYPE_STRING_ARRAY", data: [s, `${s}${s}`] }
      : i % 3 === 1
        ? { type: "ATTRIBUTE_TYPE_STRING", data: s }
        : { type: "ATTRIBUTE_TYPE_DOUBLE", data: i + 0.25 },
  ...(expiresAt === undefined ? {} : { expiresAt }),
});

/** Expiries at every millisecond width, the ends of the years the server writes, and before them (not exported). */
const EXPIRIES = [
  undefined,
  -5,
  0,
  1,
  5,
  50,
  999,
  Date.UTC(2031, 0, 2),
  Date.UTC(2031, 0, 2, 3, 4, 5, 7),
  Date.UTC(2099, 11, 31, 23, 59, 59, 990),
  Date.UTC(9999, 11, 31, 23, 59, 59, 999),
];

describe("PostgresStore.exportLines", () => {
  it("writes the bytes the cell and the model-row exports write, for escaped strings and every expiry", async () => {
    const store = await open();
    const snap = await store.write("t1", {
      tuples: ODD.map((s, i) => tuple(i, s, EXPIRIES[i % EXPIRIES.length])),
      attributes: ODD.map((s, i) => attribute(i, s, EXPIRIES[(i + 3) % EXPIRIES.length])),
    });
    const tables: string[] = [];
    const counted = new Proxy(store, {
      get: (target, key) => {
        if (key === "exportLines")
          return (...args: Parameters<PostgresStore["exportLines"]>) => {
            tables.push(args[2]);
            return target.exportLines(...args);
          };
        const v = Reflect.get(target, key, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const lines = await dump(counted);
    expect(tables).toEqual(["tuples", "attributes"]);
    const cells = await dump(without(store, "exportLines"));
    const rows = await dump(without(store, "exportLines", "exportPages"));
    expect(lines).toBe(cells);
    expect(lines).toBe(rows);
    // rows expiring at or before the epoch are not exported (the reads at time 0 do not see them)
    const seen = (shift: number) =>
      ODD.filter((_, i) => (EXPIRIES[(i + shift) % EXPIRIES.length] ?? 1) > 0).length;
    expect(seen(0) + seen(3)).toBeLessThan(2 * ODD.length);
    expect(lines.trimEnd().split("\n")).toHaveLength(1 + seen(0) + seen(3) + 1);
    // the export at an older snap, after a delete and a replacement: the rows of that snap, the same bytes
    await store.write("t1", {
      deleteTuples: [tuple(0, ODD[0]!, EXPIRIES[0])],
      tuples: [tuple(100, "new")],
      attributes: [attribute(1, "changed")],
    });
    const token = new PembaService(store).snapTokenOf("t1", snap);
    expect(await dump(store, { snapToken: token })).toBe(lines);
    expect(await dump(store)).toBe(await dump(without(store, "exportLines")));
    expect(await dump(store)).not.toBe(lines);
  });

  it("a tenant with an expiry after the year 9999 is exported through cells, with the same bytes", async () => {
    for (const odd of [Date.UTC(10000, 0, 1), 8.64e15]) {
      const store = await open();
      await store.write("t1", {
        tuples: [tuple(0, "x", odd), tuple(1, "y", 5)],
        attributes: [attribute(1, "z")],
      });
      expect(await store.exportLines("t1", await store.headSnap("t1"), "tuples")).toBeUndefined();
      expect(await dump(store)).toBe(await dump(without(store, "exportLines", "exportPages")));
    }
  });

  it("an export stopped before its end gives its connection up: later exports run", async () => {
    const store = await open();
    await store.write("t1", { tuples: Array.from({ length: 3000 }, (_, i) => tuple(i, "x")) });
    const snap = await store.headSnap("t1");
    for (let i = 0; i < 6; i++) {
      const lines = await store.exportLines("t1", snap, "tuples");
      for await (const _ of lines!) break;
    }
    const whole = await dump(store);
    expect(whole.trimEnd().split("\n")).toHaveLength(3002);
    expect(whole).toBe(await dump(without(store, "exportLines")));
  });
});
