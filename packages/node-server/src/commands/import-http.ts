/**
 * `pemba import --url`: the dump sent to a running server (Node or the Worker) as several POST data/import
 * requests, each whole lines of at most `--request-bytes`, each carrying the offset and state the previous answer
 * gave (routes/dump.ts in core). The checkpoint file keeps the last answer's offset and state, so a re-run after a
 * kill resumes at that line; a chunk the server applied but whose answer was lost is sent again, which changes
 * nothing.
 */
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { DumpWriter, headerLine, type ImportCounts, schemaLine } from "@pemba/core";
import { ConfigError } from "../config.ts";
import { callerPath } from "./caller-path.ts";
import { nativeCrc32, readInput, removeCheckpoint } from "./dump-files.ts";
import { countsText, type ImportFlags, ImportProgressReport } from "./import-progress.ts";
import type { MigrationSource } from "./migrate-sources.ts";

interface HttpCheckpoint {
  url: string;
  tenant: string;
  offset: number;
  state: string;
  counts: ImportCounts;
}

interface Answer {
  lines: number;
  state: string;
  done: boolean;
  snap_token: string;
  counts: ImportCounts;
  errors: { line: number; code: string; message: string }[];
}

/** The dump's bytes: the file, or a migrated source written as a dump. */
async function* dumpBytes(path: string, source: MigrationSource | undefined): AsyncGenerator<Uint8Array> {
  if (source === undefined) {
    yield* readInput(path);
    return;
  }
  const w = new DumpWriter({ crc32: nativeCrc32 });
  for (const r of source.lines) {
    const out =
      r.kind === "header"
        ? w.header(headerLine(r.header))
        : r.kind === "schema"
          ? w.line(schemaLine(r.schema))
          : r.kind === "tuple"
            ? w.tuple(r.tuple)
            : r.kind === "attribute"
              ? w.attribute(r.attribute)
              : undefined;
    if (out) yield out;
  }
  yield w.finish();
}

/** Whole lines in requests of at most `maxBytes` (a longer single line goes alone). */
async function* requestBodies(
  bytes: AsyncIterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<{ body: Buffer; lines: number }> {
  let pending: Buffer[] = [];
  let size = 0;
  let lines = 0;
  let rest = Buffer.alloc(0);
  for await (const chunk of bytes) {
    let data = rest.length
      ? Buffer.concat([rest, chunk])
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (let nl = data.indexOf(10, start); nl !== -1; nl = data.indexOf(10, start)) {
      const line = data.subarray(start, nl + 1);
      if (size + line.length > maxBytes && size > 0) {
        yield { body: Buffer.concat(pending), lines };
        pending = [];
        size = 0;
        lines = 0;
      }
      pending.push(line);
      size += line.length;
      lines++;
      start = nl + 1;
    }
    rest = Buffer.from(data.subarray(start));
    data = rest;
  }
  if (rest.length > 0) pending.push(rest);
  if (pending.length > 0) yield { body: Buffer.concat(pending), lines };
}

export async function importOverHttp(
  server: string,
  token: string | undefined,
  flags: ImportFlags,
  path: string,
  source: MigrationSource | undefined,
  total: { tuples: number; attributes: number } | undefined,
  requestBytes = 1_000_000,
): Promise<number> {
  const url = `${server.replace(/\/+$/, "")}/v1/tenants/${encodeURIComponent(flags.tenant)}/data/import`;
  const cpFile = flags.checkpointFile === undefined ? undefined : callerPath(flags.checkpointFile);
  const checkpoint =
    cpFile !== undefined && existsSync(cpFile)
      ? (JSON.parse(readFileSync(cpFile, "utf8")) as HttpCheckpoint)
      : undefined;
  if (checkpoint !== undefined && (checkpoint.url !== url || checkpoint.tenant !== flags.tenant))
    throw new ConfigError(`checkpoint ${flags.checkpointFile} is an import into ${checkpoint.url}`);
  const errorsPath = flags.errorsFile === undefined ? undefined : callerPath(flags.errorsFile);
  if (errorsPath !== undefined) writeFileSync(errorsPath, "");
  const progress = new ImportProgressReport(total, checkpoint?.counts);
  const started = performance.now();
  let offset = 0;
  let state = checkpoint?.state ?? "";
  let last: Answer | undefined;
  for await (const { body, lines } of requestBodies(dumpBytes(path, source), requestBytes)) {
    if (checkpoint !== undefined && offset + lines <= checkpoint.offset) {
      offset += lines; // applied before the checkpoint
      continue;
    }
    if (checkpoint !== undefined && offset < checkpoint.offset)
      throw new ConfigError(
        `checkpoint ${flags.checkpointFile}: line ${checkpoint.offset} is not where a request of ${requestBytes} bytes ends; re-run with the same --request-bytes`,
      );
    const headers: Record<string, string> = {
      "content-type": "application/x-ndjson",
      "pemba-import-offset": String(offset),
      "pemba-on-conflict": flags.onConflict,
      "pemba-dry-run": String(flags.dryRun),
      "pemba-max-errors": String(
        Math.max(0, flags.maxErrors - (last?.counts.errors ?? checkpoint?.counts.errors ?? 0)),
      ),
    };
    if (offset > 0) headers["pemba-import-state"] = state;
    if (token) headers.authorization = `Bearer ${token}`;
    const res = await fetch(url, { method: "POST", headers, body: body });
    const text = await res.text();
    if (!res.ok) throw new ConfigError(`${url}: HTTP ${res.status} at line ${offset + 1}: ${text}`);
    last = JSON.parse(text) as Answer;
    if (errorsPath !== undefined)
      for (const e of last.errors) appendFileSync(errorsPath, `${JSON.stringify(e)}\n`);
    offset = last.lines;
    state = last.state;
    progress.update(last.counts);
    if (cpFile !== undefined && !flags.dryRun) {
      const cp: HttpCheckpoint = { url, tenant: flags.tenant, offset, state, counts: last.counts };
      writeFileSync(`${cpFile}.tmp`, `${JSON.stringify(cp)}\n`);
      renameSync(`${cpFile}.tmp`, cpFile);
    }
  }
  progress.done();
  if (last === undefined || !last.done)
    throw new ConfigError(
      `line ${offset}: the dump ended without its trailer: the dump is truncated after this line`,
    );
  if (flags.checkpointFile !== undefined && !flags.dryRun) removeCheckpoint(flags.checkpointFile);
  const s = (performance.now() - started) / 1000;
  const c = last.counts;
  process.stdout.write(
    `${flags.dryRun ? "checked (dry run, nothing written)" : "imported"} into tenant ${flags.tenant} at ${server}: ${countsText(c)}; snap token ${last.snap_token || "(none: nothing written)"}; ${s.toFixed(1)} s (${Math.round((c.tuples + c.attributes) / s)} rows/s)\n`,
  );
  return 0;
}
