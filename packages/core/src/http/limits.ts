import { MAX_SCHEMA_BYTES } from "../service/schema-limits.ts";

/**
 * Request limits of the HTTP API. Every limit is refused with a Permify-style error body before anything is read
 * from or written to storage.
 */
export interface Limits {
  /** Request body size in bytes (default 4 MiB, gRPC's default message size). Over it: HTTP 413, code 8
   * (RESOURCE_EXHAUSTED, what gRPC reports for an oversize message), message ERROR_CODE_REQUEST_TOO_LARGE. */
  maxBodyBytes: number;
  /** Request body size of a schema write or partial write, and half that of a schema diff (two texts) (default: what a schema of MAX_SCHEMA_BYTES takes as a
   * JSON string at worst, 6 bytes per byte as `\u00XX`, plus 4 KiB). Over it: 413 as for maxBodyBytes, before the
   * body is read when Content-Length says so: a larger body cannot hold an admissible schema, and parsing its JSON
   * would stall the event loop. */
  maxSchemaBodyBytes: number;
  /** Tuples + attributes in one data write / relationships write / bundle run (default 1000, Permify's
   * max_data_per_write). Over it: 400 ERROR_CODE_MAX_DATA_PER_WRITE_EXCEEDED. */
  maxDataPerWrite: number;
  /** Items of one bulk check (default and hard maximum 100, as in Permify's proto). */
  maxBulkCheckItems: number;
  /** page_size of relationships/attributes reads, tenant and schema lists (default 1000).
   * Over it: 400 ERROR_CODE_PAGE_SIZE_EXCEEDED. */
  maxReadPageSize: number;
  /** page_size of lookup-entity / lookup-subject (default 10000). Over it: 400 ERROR_CODE_PAGE_SIZE_EXCEEDED. */
  maxLookupPageSize: number;
  /** Contextual tuples + attributes of one permission request (default 1000). Over it: 400
   * ERROR_CODE_MAX_DATA_PER_WRITE_EXCEEDED. */
  maxContextData: number;
}

export const defaultLimits: Limits = {
  maxBodyBytes: 4 * 1024 * 1024,
  maxSchemaBodyBytes: 6 * MAX_SCHEMA_BYTES + 4096,
  maxDataPerWrite: 1000,
  maxBulkCheckItems: 100,
  maxReadPageSize: 1000,
  maxLookupPageSize: 10000,
  maxContextData: 1000,
};

/** Default page sizes when a request leaves page_size 0 (Permify's). */
export const defaultPageSizes = { read: 50, lookup: 1000, list: 100 } as const;
