/**
 * A tenant's dump at one snap, as UTF-8 chunks: header, schema, tuples, attributes, trailer. Rows come in pages
 * (`pageSize`) of the store's paged reads at that snap, each one statement, so memory stays constant and no
 * transaction stays open: writes go on while the export runs. Every row visible at the snap is exported, expired
 * ones included (read at time 0), so a dump is a function of the snap. When the store's GC passes the snap before
 * the export ends (a row deleted after the snap could be gone), the export fails instead of missing rows.
 */
import { PembaError } from "../errors.ts";
import type { PembaService } from "../service/pemba-service.ts";
import { hasBulkExports, hasLineExports } from "../store/capabilities.ts";
import type { Snap } from "../store/store.ts";
import type { Crc32 } from "./crc32.ts";
import { DumpWriter, headerLine, schemaLine } from "./writer.ts";

export interface ExportOptions {
  /** The snap token to read at; empty or absent = the tenant's head. */
  snapToken?: string;
  pageSize?: number;
  crc32?: Crc32;
  /** The header's creation time (ms); default now. */
  now?: number;
}

export interface ExportStart {
  snap: Snap;
  snapToken: string;
  chunks: AsyncGenerator<Uint8Array>;
  /** Rows written so far (and, once `chunks` is done, in all). */
  counts: { tuples: number; attributes: number };
}

/** Resolves the snap and the schema first (so a bad token or tenant fails before any byte), then streams. */
export async function exportDump(
  service: PembaService,
  tenantId: string,
  opts: ExportOptions = {},
): Promise<ExportStart> {
  const store = service.store;
  if ((await store.getTenant(tenantId)) === undefined) {
    throw new PembaError("ERROR_CODE_TENANT_NOT_FOUND");
  }
  const snap = await service.resolveSnap(tenantId, opts.snapToken ?? "");
  const snapToken = service.snapTokenOf(tenantId, snap);
  const schema = await store.headSchema(tenantId);
  const writer = new DumpWriter({ crc32: opts.crc32 });
  const pageSize = opts.pageSize ?? 10_000;
  const createdAt = new Date(opts.now ?? Date.now()).toISOString();
  async function* chunks(): AsyncGenerator<Uint8Array> {
    yield writer.header(
      headerLine({
        tenant: tenantId,
        schema_version: schema?.version ?? "",
        snap_token: snapToken,
        created_at: createdAt,
      }),
    );
    if (schema !== undefined) writer.line(schemaLine({ version: schema.version, text: schema.schema }));
    if (hasLineExports(store)) {
      // the store writes the lines itself: their bytes are passed on
      const tuples = await store.exportLines(tenantId, snap, "tuples");
      const attributes = tuples && (await store.exportLines(tenantId, snap, "attributes"));
      if (tuples !== undefined && attributes !== undefined) {
        for await (const bytes of tuples) yield* writer.rawLines(bytes, "tuples");
        for await (const bytes of attributes) yield* writer.rawLines(bytes, "attributes");
        await store.assertSnapReadable(tenantId, snap);
        yield writer.finish();
        return;
      }
    }
    if (hasBulkExports(store)) {
      // the store's cells straight into lines: no model object per row
      for await (const rows of store.exportPages(tenantId, snap, "tuples", pageSize)) {
        const out = writer.tupleCells(rows);
        if (out) yield out;
      }
      for await (const rows of store.exportPages(tenantId, snap, "attributes", pageSize)) {
        const out = writer.attributeCells(rows);
        if (out) yield out;
      }
      await store.assertSnapReadable(tenantId, snap);
      yield writer.finish();
      return;
    }
    let cursor: string | undefined;
    do {
      const page = await store.readTuples(tenantId, snap, {}, pageSize, cursor, 0);
      for (const t of page.items) {
        const out = writer.tuple(t);
        if (out) yield out;
      }
      cursor = page.cursor || undefined;
    } while (cursor !== undefined);
    do {
      const page = await store.readAttributes(tenantId, snap, {}, pageSize, cursor, 0);
      for (const a of page.items) {
        const out = writer.attribute(a);
        if (out) yield out;
      }
      cursor = page.cursor || undefined;
    } while (cursor !== undefined);
    // a GC past the snap may have removed rows deleted after it while the pages were read
    await store.assertSnapReadable(tenantId, snap);
    yield writer.finish();
  }
  return { snap, snapToken, chunks: chunks(), counts: writer.counts };
}
