/**
 * Applies a dump's records to a tenant: the schema record first (kept under the dump's version), then the rows in
 * chunks. Every row is checked against the schema before its chunk is written; a row that does not fit is a line
 * error (reported through `onLineError`, counted against `maxErrors`, never written). Each chunk is compared with
 * the rows the tenant already has (paged reads at the head, at time 0 so expired rows count too) and only what
 * differs is written, in ONE store write:
 *   touch  new rows and rows whose value or expiry differs are written (the source wins);
 *   skip   only new rows are written; existing rows keep their value and expiry;
 *   fail   a row that exists with another value or expiry is a line error; identical rows are no conflict.
 * So a re-run of the same dump writes nothing, and a chunk written twice (a resumed import) leaves the same rows.
 */
import { type ErrorCode, isPembaError, PembaError } from "../errors.ts";
import { type Attribute, attributeKey, type Tuple, tupleKey } from "../model.ts";
import type { SchemaDefinition } from "../schema/ast.ts";
import { parseSchema } from "../schema/index.ts";
import { validateAttribute, validateTuple } from "../schema/validate-data.ts";
import type { PembaService } from "../service/pemba-service.ts";
import { hasBulkImports } from "../store/capabilities.ts";
import type { Store } from "../store/store.ts";
import type { DumpLine } from "./reader.ts";
import type { DumpHeader } from "./records.ts";

export type OnConflict = "touch" | "skip" | "fail";
export const ON_CONFLICT: readonly OnConflict[] = ["touch", "skip", "fail"];

export interface LineError {
  line: number;
  code: ErrorCode;
  message: string;
}

export interface ImportCounts {
  tuples: number;
  attributes: number;
  /** Rows written (new, or changed under `touch`). */
  written: number;
  /** Rows the tenant already had as the dump has them (or kept under `skip`). */
  unchanged: number;
  errors: number;
}

/** After a chunk is written: the last line it covers and the counts so far (a checkpoint). */
export interface ImportProgress {
  line: number;
  counts: ImportCounts;
  snapToken: string;
}

export interface ImportOptions {
  onConflict?: OnConflict;
  /** Check every record against the schema and the tenant's rows; write nothing. */
  dryRun?: boolean;
  /** Line errors allowed before the import stops (default 0: the first one stops it). */
  maxErrors?: number;
  chunkRows?: number;
  /** Lines up to this one were imported before (a checkpoint): they are read, not written again. */
  resumeAfterLine?: number;
  /** Counts of the lines before `resumeAfterLine` (from the checkpoint). */
  resumeCounts?: ImportCounts;
  /** The snap token of the last write before a resume. */
  resumeSnapToken?: string;
  /** The schema rows are checked against when the dump's schema record is not among the records (a later chunk). */
  schema?: SchemaDefinition;
  onLineError?: (e: LineError) => void | Promise<void>;
  onCommit?: (p: ImportProgress) => void | Promise<void>;
}

export const emptyCounts = (): ImportCounts => ({
  tuples: 0,
  attributes: 0,
  written: 0,
  unchanged: 0,
  errors: 0,
});

interface Pending<T> {
  row: T;
  line: number;
}

const sameValue = (a: Attribute, b: Attribute) =>
  a.value.type === b.value.type &&
  JSON.stringify(a.value.data) === JSON.stringify(b.value.data) &&
  a.expiresAt === b.expiresAt;

function groupBy<T>(rows: Pending<T>[], key: (r: T) => string): Map<string, Pending<T>[]> {
  const groups = new Map<string, Pending<T>[]>();
  for (const p of rows) {
    const k = key(p.row);
    const g = groups.get(k);
    if (g === undefined) groups.set(k, [p]);
    else g.push(p);
  }
  return groups;
}

export class DumpImport {
  readonly #service: PembaService;
  readonly #store: Store;
  readonly #tenantId: string;
  readonly #opts: Required<Pick<ImportOptions, "onConflict" | "maxErrors" | "chunkRows">> & ImportOptions;
  readonly counts: ImportCounts;
  #header: DumpHeader | undefined;
  #schema: SchemaDefinition | undefined;
  #tuples = new Map<string, Pending<Tuple>>();
  #attributes = new Map<string, Pending<Attribute>>();
  #lastLine = 0;
  #snapToken: string;

  constructor(service: PembaService, tenantId: string, opts: ImportOptions = {}) {
    this.#service = service;
    this.#store = service.store;
    this.#tenantId = tenantId;
    this.#opts = { onConflict: "touch", maxErrors: 0, chunkRows: 10_000, ...opts };
    this.counts = { ...(opts.resumeCounts ?? emptyCounts()) };
    this.#snapToken = opts.resumeSnapToken ?? "";
    this.#schema = opts.schema;
  }

  get header(): DumpHeader | undefined {
    return this.#header;
  }

  /** The snap token of the last write (or of the resumed import's). */
  get snapToken(): string {
    return this.#snapToken;
  }

  /** Takes one record; writes a chunk when it is full. */
  async add(r: DumpLine): Promise<void> {
    if (r.line <= (this.#opts.resumeAfterLine ?? 0) && r.kind !== "header" && r.kind !== "schema") return;
    switch (r.kind) {
      case "header":
        this.#header = r.header;
        return;
      case "schema":
        await this.#takeSchema(r.schema.version, r.schema.text, r.line);
        return;
      case "tuple": {
        this.counts.tuples++;
        const definition = this.#requireSchema(r.line);
        try {
          validateTuple(definition, r.tuple);
        } catch (e) {
          return this.#lineError(r.line, e);
        }
        const key = tupleKey(r.tuple);
        this.#tuples.delete(key); // the last of duplicates wins, at its line
        this.#tuples.set(key, { row: r.tuple, line: r.line });
        break;
      }
      case "attribute": {
        this.counts.attributes++;
        const definition = this.#requireSchema(r.line);
        try {
          validateAttribute(definition, r.attribute);
        } catch (e) {
          return this.#lineError(r.line, e);
        }
        const key = attributeKey(r.attribute);
        this.#attributes.delete(key);
        this.#attributes.set(key, { row: r.attribute, line: r.line });
        break;
      }
      case "trailer":
        return;
    }
    this.#lastLine = r.line;
    if (this.#tuples.size + this.#attributes.size >= this.#opts.chunkRows) await this.flush();
  }

  /** Writes what is pending (the last chunk). */
  async flush(): Promise<void> {
    if (this.#tuples.size + this.#attributes.size === 0) return;
    const tuples = [...this.#tuples.values()];
    const attributes = [...this.#attributes.values()];
    this.#tuples.clear();
    this.#attributes.clear();
    const line = this.#lastLine;
    if (hasBulkImports(this.#store)) {
      const r = await this.#store.importChunk(this.#tenantId, tuples, attributes, {
        onConflict: this.#opts.onConflict,
        maxConflicts: this.#opts.maxErrors - this.counts.errors,
        dryRun: this.#opts.dryRun === true,
      });
      if (r.snap !== undefined && !this.#opts.dryRun)
        this.#snapToken = this.#service.snapTokenOf(this.#tenantId, r.snap);
      this.counts.written += r.written;
      this.counts.unchanged += r.unchanged;
      for (const c of r.conflicts) {
        this.counts.errors++;
        await this.#opts.onLineError?.({
          line: c.line,
          code: "ERROR_CODE_ALREADY_EXIST",
          message: `${c.key} exists with another value or expiry (--on-conflict fail)`,
        });
      }
      await this.#opts.onCommit?.({ line, counts: { ...this.counts }, snapToken: this.#snapToken });
      return;
    }
    const write = { tuples: [] as Tuple[], attributes: [] as Attribute[] };
    await this.#diffTuples(tuples, write.tuples);
    await this.#diffAttributes(attributes, write.attributes);
    const rows = write.tuples.length + write.attributes.length;
    if (rows > 0 && !this.#opts.dryRun) {
      const snap = await this.#store.write(this.#tenantId, write);
      this.#snapToken = this.#service.snapTokenOf(this.#tenantId, snap);
    }
    this.counts.written += rows;
    this.counts.unchanged += tuples.length + attributes.length - rows - this.#conflicts;
    this.#conflicts = 0;
    await this.#opts.onCommit?.({ line, counts: { ...this.counts }, snapToken: this.#snapToken });
  }

  #conflicts = 0;

  /** Existing rows with the chunk's keys: read per (entity type, relation), every page. */
  async #diffTuples(rows: Pending<Tuple>[], out: Tuple[]): Promise<void> {
    if (rows.length === 0) return;
    const snap = await this.#store.headSnap(this.#tenantId);
    const existing = new Map<string, Tuple>();
    for (const group of groupBy(rows, (t) => `${t.entity.type}#${t.relation}`).values()) {
      const first = group[0]!.row;
      const ids = [...new Set(group.map((p) => p.row.entity.id))];
      const filter = { entity: { type: first.entity.type, ids }, relation: first.relation };
      let cursor: string | undefined;
      do {
        const page = await this.#store.readTuples(this.#tenantId, snap, filter, 0, cursor, 0);
        for (const t of page.items) existing.set(tupleKey(t), t);
        cursor = page.cursor || undefined;
      } while (cursor !== undefined);
    }
    for (const p of rows) {
      const old = existing.get(tupleKey(p.row));
      if (old === undefined) out.push(p.row);
      else if (old.expiresAt !== p.row.expiresAt) await this.#conflict(p.line, p.row, out, tupleKey(p.row));
    }
  }

  async #diffAttributes(rows: Pending<Attribute>[], out: Attribute[]): Promise<void> {
    if (rows.length === 0) return;
    const snap = await this.#store.headSnap(this.#tenantId);
    const existing = new Map<string, Attribute>();
    for (const group of groupBy(rows, (a) => a.entity.type).values()) {
      const ids = [...new Set(group.map((p) => p.row.entity.id))];
      const names = [...new Set(group.map((p) => p.row.attribute))];
      const filter = { entity: { type: group[0]!.row.entity.type, ids }, attributes: names };
      let cursor: string | undefined;
      do {
        const page = await this.#store.readAttributes(this.#tenantId, snap, filter, 0, cursor, 0);
        for (const a of page.items) existing.set(attributeKey(a), a);
        cursor = page.cursor || undefined;
      } while (cursor !== undefined);
    }
    for (const p of rows) {
      const old = existing.get(attributeKey(p.row));
      if (old === undefined) out.push(p.row);
      else if (!sameValue(old, p.row)) await this.#conflict(p.line, p.row, out, attributeKey(p.row));
    }
  }

  async #conflict<T>(line: number, row: T, out: T[], key: string): Promise<void> {
    if (this.#opts.onConflict === "touch") out.push(row);
    else if (this.#opts.onConflict === "fail") {
      this.#conflicts++;
      await this.#lineError(
        line,
        new PembaError(
          "ERROR_CODE_ALREADY_EXIST",
          `${key} exists with another value or expiry (--on-conflict fail)`,
        ),
      );
    }
  }

  #requireSchema(line: number): SchemaDefinition {
    if (this.#schema === undefined)
      throw new PembaError(
        "ERROR_CODE_SCHEMA_NOT_FOUND",
        `line ${line}: a row before any schema (the dump has no schema record)`,
      );
    return this.#schema;
  }

  /** The dump's schema: kept under its version (written unless the tenant has that version with the same text). */
  async #takeSchema(version: string, text: string, line: number): Promise<void> {
    try {
      this.#schema = parseSchema(text);
    } catch (e) {
      throw new PembaError(
        "ERROR_CODE_VALIDATION",
        `line ${line}: the schema does not parse: ${(e as Error).message}`,
      );
    }
    if (!this.#opts.dryRun) await this.#service.importSchema(this.#tenantId, version, text, this.#schema);
  }

  async #lineError(line: number, e: unknown): Promise<void> {
    if (!isPembaError(e)) throw e;
    this.counts.errors++;
    await this.#opts.onLineError?.({ line, code: e.code, message: e.message });
    if (this.counts.errors > this.#opts.maxErrors)
      throw new PembaError(
        e.code,
        `line ${line}: ${e.message}; ${this.counts.errors} line error(s), more than --max-errors ${this.#opts.maxErrors}: the import stops (the rows before this chunk are written)`,
      );
  }
}
