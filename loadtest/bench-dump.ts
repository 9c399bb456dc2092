/**
 * Dump import and export throughput and memory (`pemba import` / `pemba export`, the real CLI bundle), on a temp
 * SQLite file and a throwaway PostgreSQL server:
 *
 *   node --experimental-strip-types loadtest/bench-dump.ts [--rows 1000000] [--stores sqlite,postgres] [--once]
 *   node --experimental-strip-types loadtest/bench-dump.ts --rows 1000000 --dump-only FILE   (only writes the dump,
 *     for A/B runs of two builds' CLIs on the same file; `--dump FILE` then runs the steps on it instead of writing one)
 *
 * Writes a dump of --rows rows (nine tuples to one attribute, some expiring, some with a subject relation), then per
 * store: imports it (rows/s as the CLI reports it), exports it (rows/s), imports that export into a second database
 * and exports again, and checks the two exports are the same bytes after the header line (the round trip; with
 * --once, only the first import and export, compared with the source dump). Each CLI
 * run goes through /usr/bin/time for its peak RSS. Prints one line per step.
 */

import { execFileSync, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DumpWriter, headerLine, schemaLine } from "@pemba/core";
import { startPostgres } from "@pemba/core/testing/node";
import { bodyHash } from "./lib/dump-files.ts";

const { values } = parseArgs({
  options: {
    rows: { type: "string", default: "1000000" },
    stores: { type: "string", default: "sqlite,postgres" },
    /** Import and export once (no second import of the export): the round trip is then the source's. */
    once: { type: "boolean", default: false },
    "dump-only": { type: "string" },
    dump: { type: "string" },
  },
});
const rows = Number(values.rows);
const REPO = resolve(import.meta.dirname, "..");
execFileSync(process.execPath, [join(REPO, "packages/node-server/scripts/build.mjs"), "--quiet"]);
const CLI = join(REPO, "packages/node-server/dist/pemba.mjs");
const dir = mkdtempSync(join(tmpdir(), "pemba-bench-dump-"));

const SCHEMA = `entity user {}
entity team {
  relation member @user
}
entity doc {
  relation owner @user
  relation viewer @user @team#member
  attribute public boolean
  permission view = owner or viewer
}
`;

function writeDump(path: string): void {
  const fd = openSync(path, "w");
  const w = new DumpWriter();
  writeSync(
    fd,
    w.header(
      headerLine({
        tenant: "bench",
        schema_version: "v1",
        snap_token: "",
        created_at: new Date().toISOString(),
      }),
    ),
  );
  const put = (b: Uint8Array | undefined) => b && writeSync(fd, b);
  put(w.line(schemaLine({ version: "v1", text: SCHEMA })));
  const tuples = rows - Math.floor(rows / 10);
  for (let i = 0; i < tuples; i++) {
    const subject =
      i % 7 === 0
        ? { type: "team", id: `t${i % 1000}`, relation: "member" }
        : { type: "user", id: `u${i % 100_000}`, relation: "" };
    put(
      w.tuple({
        entity: { type: "doc", id: `d${i >> 3}` },
        relation: "viewer",
        subject,
        ...(i % 11 === 0 ? { expiresAt: 1_900_000_000_000 + i } : {}),
      }),
    );
  }
  for (let i = 0; i < rows - tuples; i++)
    put(
      w.attribute({
        entity: { type: "doc", id: `d${i}` },
        attribute: "public",
        value: { type: "ATTRIBUTE_TYPE_BOOLEAN", data: i % 2 === 0 },
      }),
    );
  writeSync(fd, w.finish());
  closeSync(fd);
}

/** Runs the CLI under /usr/bin/time: its output, wall seconds, peak RSS (MB) and CPU seconds (user + system). */
function timed(args: string[]): { out: string; err: string; seconds: number; rssMb: number; cpu: number } {
  const r = spawnSync("/usr/bin/time", ["-f", "TIME %e %M %U %S", process.execPath, CLI, ...args], {
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  const m = /TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
  if (r.status !== 0 || m === null) throw new Error(`pemba ${args.join(" ")}: ${r.stderr}`);
  return {
    out: r.stdout,
    err: r.stderr.replace(m[0], ""),
    seconds: Number(m[1]),
    rssMb: Number(m[2]) / 1024,
    cpu: Number(m[3]) + Number(m[4]),
  };
}

if (values["dump-only"] !== undefined) {
  writeDump(resolve(values["dump-only"]));
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
const src = values.dump === undefined ? join(dir, "src.ndjson") : resolve(values.dump);
let t = performance.now();
if (values.dump === undefined) writeDump(src);
console.log(
  `dump: ${rows} rows, ${(statSync(src).size / 1e6).toFixed(0)} MB written in ${((performance.now() - t) / 1000).toFixed(1)} s`,
);

const pg = values.stores!.includes("postgres") ? await startPostgres() : undefined;
let databases = 0;
function database(kind: string): string {
  if (kind === "sqlite") return join(dir, `db${databases++}.sqlite`);
  const name = `bench_${databases++}`;
  spawnSync("psql", [pg!.url, "-c", `CREATE DATABASE ${name}`]);
  return pg!.url.replace(/\/postgres$/, `/${name}`);
}

try {
  for (const kind of values.stores!.split(",")) {
    const a = database(kind);
    const imp = timed(["import", "--database", a, "--tenant", "bench", src]);
    const rate = /\((\d+) rows\/s\)/.exec(imp.out)?.[1];
    console.log(
      `${kind} import: ${rows} rows in ${imp.seconds} s wall, ${rate} rows/s (the CLI's count), ${Math.round(rows / imp.cpu)} rows per CPU second, peak RSS ${imp.rssMb.toFixed(0)} MB`,
    );
    const out1 = join(dir, `${kind}-1.ndjson`);
    const exp = timed(["export", "--database", a, "--tenant", "bench", "-o", out1]);
    const erate = /\((\d+) rows\/s\)/.exec(exp.err)?.[1];
    console.log(
      `${kind} export: ${rows} rows in ${exp.seconds} s wall, ${erate} rows/s (the CLI's count), ${Math.round(rows / exp.cpu)} rows per CPU second, peak RSS ${exp.rssMb.toFixed(0)} MB`,
    );
    if (values.once) {
      console.log(
        `${kind} the source dump -> import -> export: ${(await bodyHash(src)) === (await bodyHash(out1)) ? "byte-identical after the header line" : "DIFFERENT"}`,
      );
      continue;
    }
    const b = database(kind);
    const imp2 = timed(["import", "--database", b, "--tenant", "bench", out1]);
    console.log(
      `${kind} import of the export: ${imp2.seconds} s wall, ${/\((\d+) rows\/s\)/.exec(imp2.out)?.[1]} rows/s (the CLI's count), ${Math.round(rows / imp2.cpu)} rows per CPU second, peak RSS ${imp2.rssMb.toFixed(0)} MB`,
    );
    const out2 = join(dir, `${kind}-2.ndjson`);
    const exp2 = timed(["export", "--database", b, "--tenant", "bench", "-o", out2]);
    console.log(
      `${kind} export again: ${exp2.seconds} s wall, ${/\((\d+) rows\/s\)/.exec(exp2.err)?.[1]} rows/s (the CLI's count), ${Math.round(rows / exp2.cpu)} rows per CPU second, peak RSS ${exp2.rssMb.toFixed(0)} MB`,
    );
    const same = (await bodyHash(out1)) === (await bodyHash(out2));
    console.log(
      `${kind} round trip export -> import -> export: ${same ? "byte-identical after the header line" : "DIFFERENT"}; the source dump -> import -> export: ${(await bodyHash(src)) === (await bodyHash(out1)) ? "byte-identical after the header line" : "DIFFERENT"}`,
    );
    t = performance.now();
  }
} finally {
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
}
