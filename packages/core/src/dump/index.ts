/** Pemba's tenant dump (docs/DUMP.md): the format, its writer and reader, export and import. */
export { type Crc32, crc32, crcHex } from "./crc32.ts";
export { type ExportOptions, type ExportStart, exportDump } from "./export.ts";
export {
  DumpImport,
  emptyCounts,
  type ImportCounts,
  type ImportOptions,
  type ImportProgress,
  type LineError,
  ON_CONFLICT,
  type OnConflict,
} from "./import.ts";
export {
  DumpChecksumError,
  DumpFormatError,
  DumpFrameCheck,
  type DumpLine,
  type DumpPosition,
  DumpReader,
  isGzip,
} from "./reader.ts";
export {
  DUMP_FORMAT,
  DUMP_VERSION,
  type DumpHeader,
  type DumpSchemaRecord,
  type DumpTrailer,
  dumpJsonSchema,
} from "./records.ts";
export { attributeLine, type DumpCounts, DumpWriter, headerLine, schemaLine, tupleLine } from "./writer.ts";
