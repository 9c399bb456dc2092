/**
 * Building blocks of the memory store's columnar tables: the per-tenant string interner, integer hashing and
 * growable typed-array columns.
 */

/** "No row": the end of a chain, an empty hash slot. */
export const NONE = -1;

/**
 * `deleted` of a live row: the largest small integer, so visibility checks stay integer compares and a live
 * row's `deleted` fits an Int32Array column.
 */
export const LIVE = 0x3fffffff;

/** `expires` of a row that never expires: every evaluation time is before it. */
export const NEVER = Number.POSITIVE_INFINITY;

/** A row's `expires` from its record's `expiresAt`. */
export const expiresOf = (expiresAt: number | undefined): number => expiresAt ?? NEVER;

/** Strings an Interner remembers from its last lookups. */
const RECENT = 4;
/** Names kept in an Interner's small cache (a schema's types, relations and attributes fit many times over). */
const MAX_CACHED_NAMES = 256;

/**
 * One tenant's strings (types, relations, attribute names, ids) as small integers. "" is always 0. Strings are
 * only dropped when the tenant's tables are compacted by gc (`rebuild`).
 */
export class Interner {
  ids = new Map<string, number>([["", 0]]);
  strings: string[] = [""];
  /**
   * Numbers of names (types, relations, attribute names) read by queries: a few dozen entries that stay in cache,
   * in front of `ids` (hundreds of thousands of entries, where every lookup misses the CPU cache).
   */
  #names = new Map<string, number>();

  intern(s: string): number {
    let n = this.ids.get(s);
    if (n === undefined) {
      n = this.strings.length;
      this.strings.push(s);
      this.ids.set(s, n);
    }
    return n;
  }

  /**
   * The last strings found by `lookup`: a check reads the same few ids several times (an owner's `self`,
   * `follower` and `blocked` relations), and each lookup in `ids` costs a few cache misses.
   */
  #recent: string[] = ["", "", "", ""];
  #recentNumbers: number[] = [0, 0, 0, 0];
  #recentNext = 0;

  /** The number of `s`, or NONE when it was never interned (then no row can hold it). */
  lookup(s: string): number {
    const recent = this.#recent;
    for (let i = 0; i < RECENT; i++) if (recent[i] === s) return this.#recentNumbers[i];
    const n = this.ids.get(s);
    if (n === undefined) return NONE; // not remembered: it may be interned later
    this.#putRecent(s, n);
    return n;
  }

  /**
   * Puts `s` (number `n`) among the recent strings without a lookup: the subject id of a single-valued relation
   * (an owner, a parent), which the next read of a walk looks up.
   */
  remember(s: string, n: number): void {
    const recent = this.#recent;
    for (let i = 0; i < RECENT; i++) if (recent[i] === s) return;
    this.#putRecent(s, n);
  }

  /** Puts `s` (number `n`) in the oldest of the recent places. */
  #putRecent(s: string, n: number): void {
    const at = this.#recentNext;
    this.#recent[at] = s;
    this.#recentNumbers[at] = n;
    this.#recentNext = (at + 1) % RECENT;
  }

  /** As `lookup`, for names: the same numbers, through the small cache (a number never changes until `rebuild`). */
  lookupName(s: string): number {
    const cached = this.#names.get(s);
    if (cached !== undefined) return cached;
    const n = this.ids.get(s);
    if (n === undefined) return NONE; // not cached: it may be interned later
    if (this.#names.size < MAX_CACHED_NAMES) this.#names.set(s, n);
    return n;
  }

  /**
   * Keeps only the strings marked in `used` (indexed by old number); returns old number -> new number (NONE for
   * dropped strings). "" stays 0.
   */
  rebuild(used: Uint8Array): Int32Array {
    const remap = new Int32Array(this.strings.length).fill(NONE);
    const strings: string[] = [""];
    const ids = new Map<string, number>([["", 0]]);
    remap[0] = 0;
    for (let i = 1; i < this.strings.length; i++) {
      if (used[i] === 0) continue;
      const s = this.strings[i];
      remap[i] = strings.length;
      ids.set(s, strings.length);
      strings.push(s);
    }
    this.strings = strings;
    this.ids = ids;
    this.#names.clear();
    this.#recent.fill("");
    this.#recentNumbers.fill(0);
    return remap;
  }
}

// murmur3-style mixing of 32-bit integers

export function mix(h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  h ^= Math.imul(k, 0x1b873593);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

export function finish(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

export function hash2(a: number, b: number): number {
  return finish(mix(mix(0x2545f491, a), b));
}

export function hash3(a: number, b: number, c: number): number {
  return finish(mix(mix(mix(0x2545f491, a), b), c));
}

export function hash5(a: number, b: number, c: number, d: number, e: number): number {
  return finish(mix(mix(mix(mix(mix(0x2545f491, a), b), c), d), e));
}

export function hash6(a: number, b: number, c: number, d: number, e: number, f: number): number {
  return finish(mix(mix(mix(mix(mix(mix(0x2545f491, a), b), c), d), e), f));
}

/** The smallest power of two >= n (at least 16). */
export function pow2(n: number): number {
  let c = 16;
  while (c < n) c *= 2;
  return c;
}

export function emptySlots(size: number): Int32Array {
  return new Int32Array(allocateBuffer(size * 4), 0, size).fill(NONE);
}

/** Buffers from this size up are mapped by the engine rather than taken from malloc (see allocateBuffer). */
const MAPPED_BYTES = 1 << 20;
const WASM_PAGE = 65536;
/** The global WebAssembly namespace, where the runtime has one (core is typed without DOM/wasm libs). */
const wasm = (
  globalThis as {
    WebAssembly?: { Memory: new (d: { initial: number; maximum: number }) => { buffer: ArrayBuffer } };
  }
).WebAssembly;

/**
 * A zeroed buffer of at least `bytes` bytes. Large ones are the memory of a WebAssembly.Memory: V8 maps those
 * with mmap and unmaps them when they are collected, so the columns a growing table leaves behind go back to
 * the system. ArrayBuffers come from malloc, whose heap keeps the freed columns (tens of MB after a bulk load)
 * resident as fragments. Falls back to an ArrayBuffer where WebAssembly is not available.
 */
export function allocateBuffer(bytes: number): ArrayBuffer {
  if (bytes >= MAPPED_BYTES && wasm !== undefined) {
    const pages = Math.ceil(bytes / WASM_PAGE);
    try {
      return new wasm.Memory({ initial: pages, maximum: pages }).buffer;
    } catch {
      // address space or engine limits: malloc instead
    }
  }
  return new ArrayBuffer(bytes);
}

/**
 * Allocates the columns of one table in ONE buffer (Float64 columns first, for alignment), copying the first `n`
 * rows of the old columns: a few large allocations instead of one per column, so growing tables leave less
 * malloc fragmentation behind.
 */
export class ColumnBlock {
  private readonly buffer: ArrayBuffer;
  private offset = 0;
  private readonly cap: number;
  private readonly n: number;

  constructor(cap: number, bytesPerRow: number, n: number) {
    this.buffer = allocateBuffer(cap * bytesPerRow);
    this.cap = cap;
    this.n = n;
  }

  f64(old: Float64Array): Float64Array {
    const a = new Float64Array(this.buffer, this.offset, this.cap);
    this.offset += this.cap * 8;
    a.set(old.subarray(0, this.n));
    return a;
  }

  i32(old: Int32Array): Int32Array {
    const a = new Int32Array(this.buffer, this.offset, this.cap);
    this.offset += this.cap * 4;
    a.set(old.subarray(0, this.n));
    return a;
  }
}

/** Next column capacity: x1.5 (typed arrays cannot grow in place; this bounds the slack to a half). */
export function nextCapacity(cap: number, need: number): number {
  let c = Math.max(64, cap);
  while (c < need) c = Math.ceil(c * 1.5);
  return c;
}

/** First index i in [0, n) with col[i] > value (col sorted ascending). */
export function upperBound(col: Int32Array | Float64Array, n: number, value: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (col[mid] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index i in [0, n) with col[i] >= value (col sorted ascending). */
export function lowerBound(col: Int32Array | Float64Array, n: number, value: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (col[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
