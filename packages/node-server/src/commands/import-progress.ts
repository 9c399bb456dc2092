/**
 * What `pemba import` runs with and reports: its flags, its counts as text, and its progress on stderr: on a terminal, one bar redrawn in place (rows, rows/s, ETA, errors); otherwise a
 * line every `everyMs` (a log or CI keeps a readable record).
 */
import type { ImportCounts, OnConflict } from "@pemba/core";

/** What `pemba import` was asked to do, by flag. */
export interface ImportFlags {
  tenant: string;
  onConflict: OnConflict;
  dryRun: boolean;
  maxErrors: number;
  chunkRows: number;
  errorsFile: string | undefined;
  checkpointFile: string | undefined;
}

/** The counts of an import, as `pemba import` prints them. */
export function countsText(c: ImportCounts): string {
  return `${c.tuples} tuples, ${c.attributes} attributes (${c.written} written, ${c.unchanged} unchanged, ${c.errors} errors)`;
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

export class ImportProgressReport {
  readonly #total: number | undefined;
  readonly #started = performance.now();
  readonly #base: number;
  readonly #tty: boolean;
  readonly #everyMs: number;
  readonly #write: (text: string) => void;
  #last = 0;
  #counts: ImportCounts | undefined;

  constructor(
    total: { tuples: number; attributes: number } | undefined,
    resumed?: ImportCounts,
    opts: { tty?: boolean; everyMs?: number; write?: (text: string) => void } = {},
  ) {
    this.#total = total === undefined ? undefined : total.tuples + total.attributes;
    this.#base = resumed === undefined ? 0 : resumed.tuples + resumed.attributes;
    this.#tty = opts.tty ?? process.stderr.isTTY === true;
    this.#everyMs = opts.everyMs ?? (this.#tty ? 200 : 5000);
    this.#write = opts.write ?? ((t) => process.stderr.write(t));
  }

  update(counts: ImportCounts, force = false): void {
    this.#counts = counts;
    const now = performance.now();
    if (!force && now - this.#last < this.#everyMs) return;
    this.#last = now;
    this.#write(this.#tty ? `\r${this.text(now)}\x1b[K` : `${this.text(now)}\n`);
  }

  /** One report: rows done (of the total), rows/s of this run, ETA, errors. */
  text(now = performance.now()): string {
    const c = this.#counts;
    const rows = c === undefined ? this.#base : c.tuples + c.attributes;
    const rate = (rows - this.#base) / Math.max((now - this.#started) / 1000, 1e-3);
    const errors = c?.errors ?? 0;
    if (this.#total === undefined || this.#total === 0)
      return `import: ${fmt(rows)} rows, ${fmt(rate)} rows/s, ${errors} errors`;
    const share = Math.min(rows / this.#total, 1);
    const eta = rate > 0 ? (this.#total - rows) / rate : Number.NaN;
    const bar = this.#tty ? `[${"#".repeat(Math.round(share * 30)).padEnd(30, ".")}] ` : "";
    return `import: ${bar}${(share * 100).toFixed(1)}% ${fmt(rows)}/${fmt(this.#total)} rows, ${fmt(rate)} rows/s, ETA ${Number.isNaN(eta) ? "?" : `${Math.ceil(eta)} s`}, ${errors} errors`;
  }

  done(): void {
    if (this.#counts !== undefined) this.update(this.#counts, true);
    if (this.#tty) this.#write("\n");
  }
}
