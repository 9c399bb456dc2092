/** Wire shapes of the dump endpoints (Pemba extensions): data/export's request, data/import's answer. */
import { z } from "@hono/zod-openapi";
import { plainString, protoMessage } from "./pgv.ts";

export const DataExportRequestSchema = protoMessage("DataExportRequest", { snap_token: plainString() });

/** One line of the exported dump: a header, schema, tuple, attribute or trailer record (docs/dump.schema.json). */
export const DumpLineSchema = z
  .object({ type: z.enum(["header", "schema", "tuple", "attribute", "trailer"]) })
  .loose()
  .openapi("DumpLine");

const counts = z.object({
  tuples: z.number().int(),
  attributes: z.number().int(),
  written: z.number().int(),
  unchanged: z.number().int(),
  errors: z.number().int(),
});

export const DataImportResponseSchema = z
  .object({
    lines: z
      .number()
      .int()
      .describe("lines of the dump applied so far: the next request's pemba-import-offset"),
    state: z.string().describe("the next request's pemba-import-state"),
    done: z.boolean().describe("the trailer was read and holds: the import is complete"),
    snap_token: z.string().describe("the token of the last write (empty while nothing was written)"),
    counts,
    errors: z.array(z.object({ line: z.number().int(), code: z.string(), message: z.string() })),
  })
  .openapi("DataImportResponse");

export type DataImportResponse = z.infer<typeof DataImportResponseSchema>;
