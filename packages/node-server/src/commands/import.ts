/**
 * `pemba import (--database <url> | --url <server>) [--tenant <id>] FILE|-`: a dump (docs/DUMP.md), or with
 * `--from` another system's data (migrate-sources.ts), into a tenant.
 *
 * A file is checked whole first (its frame: line count, checksum, trailer; at disk speed), so a truncated or altered
 * file is refused, naming the line, before anything is written. Stdin cannot be read twice: its frame is checked as
 * it streams, and a fault found at its end comes after the rows before it were written (the checkpoint then lets a
 * re-run with the whole file finish the import).
 *
 * Each chunk is one write; after it the checkpoint file (`--checkpoint`, default FILE.checkpoint) names the last line
 * written. A re-run with the checkpoint (after kill -9, say) reads the dump again and writes from the line after it;
 * a chunk written but not yet checkpointed is written again, which changes nothing (import.ts compares each chunk
 * with the tenant's rows). The checkpoint is removed when the import completes.
 */
import { appendFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  DumpChecksumError,
  DumpFrameCheck,
  DumpImport,
  type DumpLine,
  DumpReader,
  type LineError,
  ON_CONFLICT,
  type OnConflict,
  PembaError,
  PembaService,
} from "@pemba/core";
import { openStore } from "@pemba/core/node";
import { ConfigError } from "../config.ts";
import { callerPath } from "./caller-path.ts";
import {
  type Checkpoint,
  nativeCrc32,
  readCheckpoint,
  readInput,
  removeCheckpoint,
  writeCheckpoint,
} from "./dump-files.ts";
import { importOverHttp } from "./import-http.ts";
import { countsText, type ImportFlags, ImportProgressReport } from "./import-progress.ts";
import { MIGRATION_SOURCES, migrationLines } from "./migrate-sources.ts";

const USAGE =
  "usage: pemba import (--database <url> | --url <server> [--token <key>]) [--tenant <id>] [--from <source>] [--on-conflict touch|skip|fail] [--dry-run] [--errors <file>] [--max-errors <n>] [--checkpoint <file>] <file|->\n";

/** The dump's records, checked line by line (DumpReader); `from` a position when resuming over HTTP. */
export async function* dumpRecords(
  path: string,
  reader = new DumpReader({ crc32: nativeCrc32 }),
): AsyncGenerator<DumpLine> {
  for await (const chunk of readInput(path)) yield* reader.push(chunk);
  reader.end();
}

/** A file's frame, checked before anything is written; a bad checksum is narrowed down to its line. */
export async function checkFrame(path: string): Promise<{ tuples: number; attributes: number }> {
  const frame = new DumpFrameCheck({ crc32: nativeCrc32 });
  for await (const chunk of readInput(path)) frame.push(chunk);
  try {
    const t = frame.end();
    return { tuples: t.tuples, attributes: t.attributes };
  } catch (e) {
    // the full reader fails at the first line that is not a record, or at the trailer
    if (e instanceof DumpChecksumError) for await (const _ of dumpRecords(path));
    throw e;
  }
}

function errorReport(file: string | undefined): (e: LineError) => void {
  if (file === undefined) return () => {};
  const path = callerPath(file);
  writeFileSync(path, "");
  return (e) => appendFileSync(path, `${JSON.stringify(e)}\n`);
}

export async function runImport(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      database: { type: "string" },
      url: { type: "string" },
      token: { type: "string" },
      tenant: { type: "string", default: "t1" },
      from: { type: "string", default: "pemba" },
      "on-conflict": { type: "string", default: "touch" },
      "dry-run": { type: "boolean", default: false },
      errors: { type: "string" },
      "max-errors": { type: "string", default: "0" },
      checkpoint: { type: "string" },
      "chunk-rows": { type: "string", default: "20000" },
      "request-bytes": { type: "string", default: "1000000" },
      rewrite: { type: "string", multiple: true },
      schema: { type: "string" },
    },
    allowPositionals: true,
    strict: true,
  });
  const onConflict = values["on-conflict"] as OnConflict;
  const maxErrors = Number(values["max-errors"]);
  const from = values.from!;
  if (
    positionals.length !== 1 ||
    (values.database === undefined) === (values.url === undefined) ||
    !ON_CONFLICT.includes(onConflict) ||
    !(Number.isInteger(maxErrors) && maxErrors >= 0) ||
    !(from === "pemba" || from in MIGRATION_SOURCES)
  ) {
    process.stderr.write(USAGE);
    return 2;
  }
  const path = positionals[0]!;
  const flags: ImportFlags = {
    tenant: values.tenant!,
    onConflict,
    dryRun: values["dry-run"] === true,
    maxErrors,
    chunkRows: Number(values["chunk-rows"]),
    errorsFile: values.errors,
    // a server (--from permify) has no file beside which a checkpoint could go
    checkpointFile:
      values.checkpoint ?? (path === "-" || from === "permify" ? undefined : `${path}.checkpoint`),
  };
  // another system's data: converted to dump records in memory first, so anything it cannot represent stops
  // the import before a row is written
  const source =
    from === "pemba"
      ? undefined
      : await migrationLines(from as keyof typeof MIGRATION_SOURCES, path, {
          rewrites: values.rewrite ?? [],
          tenant: flags.tenant,
          schemaFile: values.schema,
        });
  const total = source?.totals ?? (path === "-" ? undefined : await checkFrame(path));
  const records = source?.lines ?? dumpRecords(path);
  if (values.url !== undefined)
    return importOverHttp(
      values.url,
      values.token,
      flags,
      path,
      source,
      total,
      Number(values["request-bytes"]),
    );
  return importIntoDatabase(values.database!, flags, records, total);
}

async function importIntoDatabase(
  database: string,
  flags: ImportFlags,
  records: AsyncIterable<DumpLine> | Iterable<DumpLine>,
  total: { tuples: number; attributes: number } | undefined,
): Promise<number> {
  const url = /^[a-z][a-z0-9+.-]*:/i.test(database) ? database : callerPath(database);
  const store = await openStore(url);
  const started = performance.now();
  try {
    const service = new PembaService(store);
    if ((await store.getTenant(flags.tenant)) === undefined && !flags.dryRun)
      await store.createTenant(flags.tenant, flags.tenant);
    const checkpoint = flags.checkpointFile === undefined ? undefined : readCheckpoint(flags.checkpointFile);
    if (checkpoint !== undefined && checkpoint.tenant !== flags.tenant)
      throw new ConfigError(
        `checkpoint ${flags.checkpointFile} is an import into tenant ${checkpoint.tenant}, not ${flags.tenant}`,
      );
    // BulkImports.bulkLoad: this process does nothing but the import
    if (!flags.dryRun && "bulkLoad" in store && typeof store.bulkLoad === "function") store.bulkLoad();
    const progress = new ImportProgressReport(total, checkpoint?.counts);
    const importer = new DumpImport(service, flags.tenant, {
      onConflict: flags.onConflict,
      dryRun: flags.dryRun,
      maxErrors: flags.maxErrors,
      chunkRows: flags.chunkRows,
      resumeAfterLine: checkpoint?.line,
      resumeCounts: checkpoint?.counts,
      resumeSnapToken: checkpoint?.snap_token,
      onLineError: errorReport(flags.errorsFile),
      onCommit: (p) => {
        progress.update(p.counts);
        if (flags.checkpointFile === undefined || flags.dryRun) return;
        const header = importer.header!;
        writeCheckpoint(flags.checkpointFile, {
          dump: { tenant: header.tenant, snap_token: header.snap_token, created_at: header.created_at },
          tenant: flags.tenant,
          line: p.line,
          counts: p.counts,
          snap_token: p.snapToken,
        } satisfies Checkpoint);
      },
    });
    if (checkpoint !== undefined)
      process.stderr.write(`resuming after line ${checkpoint.line} (${flags.checkpointFile})\n`);
    for await (const r of records) {
      if (r.kind === "header" && checkpoint !== undefined) {
        const d = checkpoint.dump;
        if (
          d.tenant !== r.header.tenant ||
          d.snap_token !== r.header.snap_token ||
          d.created_at !== r.header.created_at
        )
          throw new ConfigError(
            `checkpoint ${flags.checkpointFile} belongs to another dump (tenant ${d.tenant} at ${d.snap_token}, ${d.created_at})`,
          );
      }
      await importer.add(r);
    }
    await importer.flush();
    if (!flags.dryRun && "bulkLoadDone" in store && typeof store.bulkLoadDone === "function")
      store.bulkLoadDone();
    progress.done();
    if (flags.checkpointFile !== undefined && !flags.dryRun) removeCheckpoint(flags.checkpointFile);
    const c = importer.counts;
    const s = (performance.now() - started) / 1000;
    const verb = flags.dryRun ? "checked (dry run, nothing written)" : "imported";
    process.stdout.write(
      `${verb} into tenant ${flags.tenant}: ${countsText(c)}; snap token ${importer.snapToken || "(none: nothing written)"}; ${s.toFixed(1)} s (${Math.round((c.tuples + c.attributes) / s)} rows/s)\n`,
    );
    return 0;
  } catch (e) {
    if (e instanceof PembaError) process.stderr.write("\n");
    throw e;
  } finally {
    await store.close();
  }
}
