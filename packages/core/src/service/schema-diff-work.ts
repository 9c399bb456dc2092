/**
 * The work one schema diff (or safe schema write) may do, and how it shares the event loop. A diff over a large
 * tenant reads many rows and asks many checks; it does so in slices of bounded size, each in an event-loop turn of
 * its own, so other tenants' requests are answered between them, and it stops at a per-request budget: rows read
 * (over it: a clear error, since counts must be exact) and pairs asked (over it: a smaller, labelled sample).
 */
import { PembaError } from "../errors.ts";
import { nextTurn } from "../next-turn.ts";

export interface DiffBudget {
  /** Live rows one diff may read to count orphans, changed values and stored ids. */
  rows: number;
  /** (entity, subject) pairs one diff may ask over all its permissions (each pair under both schemas). */
  pairs: number;
}

export const DEFAULT_DIFF_BUDGET: DiffBudget = { rows: 2_000_000, pairs: 50_000 };

/** Rows read per turn when the diff pages through a store's rows itself. */
export const SCAN_PAGE = 1000;
/** Checks asked per turn (each batch's reads of one walk level are one store call). */
export const CHECK_BATCH = 100;

/** What one diff has done so far: rows read, pairs asked, and the turns it gave the event loop. */
export class DiffWork {
  rows = 0;
  pairs = 0;
  turns = 0;
  readonly budget: DiffBudget;
  /** Names the request in errors: `schema diff` or `safe schema write`. */
  readonly #what: string;

  constructor(budget: Partial<DiffBudget> = {}, what = "schema diff") {
    this.budget = { ...DEFAULT_DIFF_BUDGET, ...budget };
    this.#what = what;
  }

  /** Counts rows read; over the budget: 429 RESOURCE_EXHAUSTED, as the other limits on one request's work. */
  readRows(n: number): void {
    this.rows += n;
    if (this.rows > this.budget.rows)
      throw new PembaError(
        "ERROR_CODE_EXECUTION",
        `${this.#what} would read more than ${this.budget.rows} rows (its work budget per request)`,
        { grpcCode: 8 },
      );
  }

  /** Gives the event loop a turn (the I/O and timers that arrived meanwhile run before the diff goes on). */
  async yieldTurn(): Promise<void> {
    this.turns++;
    await nextTurn();
  }
}
