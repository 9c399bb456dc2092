/**
 * Decided sub-problems of one request. Per entry, the column of the current subject holds `depth * 2 + result`
 * (-1, or missing, when undecided): a result decided with `depth` left answers again whenever at least as much is
 * left. Each subject (bulk check, lookup-subject) keeps a column of its own.
 */
import type { Subject } from "../../model.ts";

export const subjectKey = (s: Subject): string => `${s.type}:${s.id}#${s.relation}`;

export class Memo {
  #column: number[] = [];
  #bySubject: Map<string, number[]> | undefined = undefined;

  reset(): void {
    // the column is kept (its capacity) unless other subjects' columns were made
    if (this.#bySubject !== undefined) this.#column = [];
    this.#bySubject = undefined;
  }

  /** A new entry (see EntryTable): undecided, over whatever an earlier question left there. */
  add(e: number): void {
    this.#column[e] = -1;
  }

  /** The result (FALSE / TRUE) decided for entry `e` with at most `depth` left; -1 when none. */
  recall(e: number, depth: number): number {
    const m = this.#column[e];
    return m !== undefined && m >= 0 && m >> 1 <= depth ? m & 1 : -1;
  }

  remember(e: number, depth: number, result: number): void {
    this.#column[e] = depth * 2 + result;
  }

  /** Switches from subject `from` to `to` (entries 0 .. n - 1 exist): each subject keeps its own column. */
  setSubject(n: number, from: Subject, to: Subject): void {
    if (this.#bySubject === undefined) {
      // entries added from now on are not cleared in this column while another subject's is current
      this.#column.length = n;
      this.#bySubject = new Map();
      this.#bySubject.set(subjectKey(from), this.#column);
    }
    const key = subjectKey(to);
    let column = this.#bySubject.get(key);
    if (!column) {
      column = [];
      this.#bySubject.set(key, column);
    }
    this.#column = column;
  }
}
