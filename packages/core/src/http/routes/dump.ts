/**
 * data/export and data/import (Pemba extensions beside Permify's API): a tenant's dump (docs/DUMP.md) out, as a
 * stream, and in, as chunks of its lines. An import larger than one request's body limit is several requests: each
 * carries whole lines from `pemba-import-offset` (the lines applied before) with `pemba-import-state` (the previous
 * answer's `state`: the checksum and counts so far, the dump's schema version), so the server keeps nothing between
 * them and a client that lost an answer resumes from the last one it has (a chunk applied twice changes nothing).
 */

import { exportDump } from "../../dump/export.ts";
import {
  DumpImport,
  emptyCounts,
  type ImportCounts,
  type LineError,
  ON_CONFLICT,
  type OnConflict,
} from "../../dump/import.ts";
import { type DumpPosition, DumpReader } from "../../dump/reader.ts";
import { PembaError } from "../../errors.ts";
import {
  DataExportRequestSchema,
  type DataImportResponse,
  DataImportResponseSchema,
  DumpLineSchema,
} from "../../wire/dump.ts";
import { jsonAnswer, ndjsonAnswer } from "../pipeline.ts";
import { ROUTES } from "../route-table.ts";
import type { AppDeps } from "./deps.ts";

/** What a multi-request import carries from one request to the next. */
interface ImportState {
  position: DumpPosition;
  counts: ImportCounts;
  schemaVersion: string;
  snapToken: string;
}

const encodeState = (s: ImportState): string => encodeURIComponent(JSON.stringify(s));

function decodeState(text: string | undefined, offset: number): ImportState {
  if (offset === 0)
    return {
      position: { lines: 0, crc: 0, tuples: 0, attributes: 0 },
      counts: emptyCounts(),
      schemaVersion: "",
      snapToken: "",
    };
  let s: ImportState | undefined;
  try {
    s = JSON.parse(decodeURIComponent(text ?? "")) as ImportState;
  } catch {
    s = undefined;
  }
  if (s?.position?.lines !== offset)
    throw new PembaError(
      "ERROR_CODE_VALIDATION",
      `pemba-import-state must be the previous answer's state for offset ${offset}`,
    );
  return s;
}

function flag(value: string | undefined, name: string, fallback: string, allowed: readonly string[]): string {
  const v = value ?? fallback;
  if (!allowed.includes(v))
    throw new PembaError("ERROR_CODE_VALIDATION", `${name} must be one of ${allowed.join(", ")}`);
  return v;
}

export function registerDumpRoutes({ routes, service, limits }: AppDeps): void {
  routes.add(
    {
      route: ROUTES.dataExport,
      summary: "export the tenant as a dump (Pemba extension: NDJSON, docs/DUMP.md)",
      tag: "Data",
      body: DataExportRequestSchema,
      response: DumpLineSchema,
    },
    async ({ body: r, tenantId }) => {
      // the snap and schema are resolved before the answer starts: a bad token is an HTTP error
      const dump = await exportDump(service, tenantId, { snapToken: r.snap_token });
      const chunks = dump.chunks;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = await chunks.next();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        },
        cancel() {
          void chunks.return(undefined);
        },
      });
      return ndjsonAnswer(body);
    },
  );

  routes.add(
    {
      route: ROUTES.dataImport,
      summary: "import a chunk of a dump's lines (Pemba extension: NDJSON body, docs/DUMP.md)",
      description:
        "The body is whole lines of a dump from line `pemba-import-offset` + 1 (header `pemba-import-offset`, default 0, " +
        "with `pemba-import-state` from the previous answer when over 0). Headers `pemba-on-conflict` (touch, skip, fail), " +
        "`pemba-dry-run` (true/false), `pemba-max-errors` (default 0).",
      tag: "Data",
      response: DataImportResponseSchema,
    },
    async ({ req, tenantId }) => {
      const offset = Number(req.header("pemba-import-offset") ?? "0");
      if (!Number.isSafeInteger(offset) || offset < 0)
        throw new PembaError("ERROR_CODE_VALIDATION", "pemba-import-offset must be a line count");
      const state = decodeState(req.header("pemba-import-state"), offset);
      const onConflict = flag(
        req.header("pemba-on-conflict"),
        "pemba-on-conflict",
        "touch",
        ON_CONFLICT,
      ) as OnConflict;
      const dryRun =
        flag(req.header("pemba-dry-run"), "pemba-dry-run", "false", ["true", "false"]) === "true";
      const maxErrors = Number(req.header("pemba-max-errors") ?? "0");
      if (!Number.isSafeInteger(maxErrors) || maxErrors < 0)
        throw new PembaError("ERROR_CODE_VALIDATION", "pemba-max-errors must be a count");
      const bytes = new TextEncoder().encode(await req.text(limits.maxBodyBytes));
      if (bytes.length > 0 && bytes[bytes.length - 1] !== 10)
        throw new PembaError(
          "ERROR_CODE_VALIDATION",
          `line ${offset + 1 + countLines(bytes)}: the body must end with a whole line`,
        );
      const reader = new DumpReader({ from: state.position });
      const errors: LineError[] = [];
      const schema = state.schemaVersion
        ? (await service.resolveSchema(tenantId, state.schemaVersion)).definition
        : undefined;
      const importer = new DumpImport(service, tenantId, {
        onConflict,
        dryRun,
        maxErrors,
        chunkRows: 5000,
        resumeCounts: state.counts,
        resumeSnapToken: state.snapToken,
        schema,
        onLineError: (e) => {
          errors.push(e);
        },
      });
      for (const record of reader.push(bytes)) await importer.add(record);
      await importer.flush();
      const answer: DataImportResponse = {
        lines: reader.position.lines,
        state: encodeState({
          position: reader.position,
          counts: importer.counts,
          schemaVersion: importer.header?.schema_version ?? state.schemaVersion,
          snapToken: importer.snapToken,
        }),
        done: reader.done,
        snap_token: importer.snapToken,
        counts: importer.counts,
        errors,
      };
      return jsonAnswer(answer);
    },
  );
}

function countLines(bytes: Uint8Array): number {
  let n = 0;
  for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) n++;
  return n;
}
