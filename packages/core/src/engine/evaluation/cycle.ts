/**
 * Cycle cut: a sub-problem already on the current walk path cannot grant, so it answers FALSE there (the least
 * fixpoint). A result computed under such a cut holds only for that path: it may be memoized only when every cut
 * it saw points at itself or deeper.
 */

/**
 * The most sub-checks nested in one walk (the path length). Each level takes a few JS stack frames, and Node's
 * default stack holds about 3,000 levels; deeper chains answer ERROR_CODE_DEPTH_NOT_ENOUGH, like an exhausted depth.
 */
export const MAX_NESTING = 1000;

export class WalkPath {
  /** Entries of the sub-problems on the current walk path (short: a linear scan beats a Map here). */
  readonly #entries: number[] = [];
  /** The shallowest path index a cut inside the current sub-problem pointed at (+Infinity when none). */
  #cut = Number.POSITIVE_INFINITY;

  reset(): void {
    // emptied only when not empty: setting an array's length is a runtime call in V8
    if (this.#entries.length !== 0) this.#entries.length = 0;
    this.#cut = Number.POSITIVE_INFINITY;
  }

  /** Sub-problems on the path. */
  get length(): number {
    return this.#entries.length;
  }

  /** True when entry `e` is on the path: a cycle, cut there (the caller answers FALSE). */
  cuts(e: number): boolean {
    const at = this.#entries.indexOf(e);
    if (at === -1) return false;
    if (at < this.#cut) this.#cut = at;
    return true;
  }

  /** Puts `e` on the path; returns the enclosing sub-problem's cut, for `leave`. */
  enter(e: number): number {
    this.#entries.push(e);
    const outer = this.#cut;
    this.#cut = Number.POSITIVE_INFINITY;
    return outer;
  }

  /** Takes the entry at path index `at` off; true when no cut inside it pointed above it (its result may be memoized). */
  leave(at: number, outer: number): boolean {
    this.#entries.pop();
    const inner = this.#cut;
    if (inner >= at) {
      this.#cut = outer;
      return true;
    }
    this.#cut = Math.min(inner, outer);
    return false;
  }
}
