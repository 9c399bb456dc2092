/**
 * The memory store's tuples of one tenant, columnar: one typed-array column per field (interned strings as
 * integers), rows in insertion (= transaction) order, history kept until gc.
 *
 * Indexes, all threaded through per-row `next` columns so no index allocates per entity or per subject:
 * - by entity (type, id, relation): an open-addressing table whose slot holds the newest row of a circular list
 *   (`nextE`) of every row, any state, with that key, oldest first after the newest; the check direction.
 * - by subject (type, id, relation, entity type, relation): the same over `nextS`; the lookup direction.
 * - live rows by all six fields: chained hash buckets over `nextL`, to find an existing tuple on write.
 * Slots hold no key: a probe compares the row it points at.
 */
import { ColumnBlock, emptySlots, hash3, hash5, hash6, LIVE, NONE, nextCapacity, pow2 } from "./columns.ts";

export class TupleTable {
  /** Rows in use; rows are 0..n-1. */
  n = 0;
  et: Int32Array;
  eid: Int32Array;
  rel: Int32Array;
  st: Int32Array;
  sid: Int32Array;
  srel: Int32Array;
  created: Int32Array;
  /** LIVE while live. */
  deleted: Int32Array;
  /** Stable row id (paging cursors, change-feed order); ascending with the row index. */
  id: Float64Array;
  /** When the row stops counting (ms since the epoch); NEVER (+Infinity) when it does not expire. */
  expires: Float64Array;
  nextE: Int32Array;
  nextS: Int32Array;
  nextL: Int32Array;
  eSlots: Int32Array;
  eGroups = 0;
  sSlots: Int32Array;
  sGroups = 0;
  lBuckets: Int32Array;
  liveCount = 0;
  private seq = 0;
  /** ANDed into every hash (tests: 0 makes every key collide). */
  private readonly hashMask: number;

  constructor(hashMask = -1) {
    this.hashMask = hashMask;
    const none = new Int32Array(0);
    this.et = this.eid = this.rel = this.st = this.sid = this.srel = none;
    this.created = this.deleted = this.nextE = this.nextS = this.nextL = none;
    this.id = this.expires = new Float64Array(0);
    this.resize(64);
    this.eSlots = emptySlots(16);
    this.sSlots = emptySlots(16);
    this.lBuckets = emptySlots(16);
  }

  private resize(cap: number): void {
    const b = new ColumnBlock(cap, 2 * 8 + 11 * 4, this.n);
    this.id = b.f64(this.id);
    this.expires = b.f64(this.expires);
    this.et = b.i32(this.et);
    this.eid = b.i32(this.eid);
    this.rel = b.i32(this.rel);
    this.st = b.i32(this.st);
    this.sid = b.i32(this.sid);
    this.srel = b.i32(this.srel);
    this.created = b.i32(this.created);
    this.deleted = b.i32(this.deleted);
    this.nextE = b.i32(this.nextE);
    this.nextS = b.i32(this.nextS);
    this.nextL = b.i32(this.nextL);
  }

  // lookups

  /** The newest row (any state) of the entity key, NONE when there is none; walk `nextE` from it. */
  entityTail(et: number, eid: number, rel: number): number {
    const slots = this.eSlots;
    const m = slots.length - 1;
    let i = hash3(et, eid, rel) & this.hashMask & m;
    for (;;) {
      const r = slots[i];
      if (r === NONE) return NONE;
      if (this.eid[r] === eid && this.rel[r] === rel && this.et[r] === et) return r;
      i = (i + 1) & m;
    }
  }

  /** The newest row (any state) of the subject key, NONE when there is none; walk `nextS` from it. */
  subjectTail(st: number, sid: number, srel: number, et: number, rel: number): number {
    const slots = this.sSlots;
    const m = slots.length - 1;
    let i = hash5(st, sid, srel, et, rel) & this.hashMask & m;
    for (;;) {
      const r = slots[i];
      if (r === NONE) return NONE;
      if (
        this.sid[r] === sid &&
        this.rel[r] === rel &&
        this.st[r] === st &&
        this.srel[r] === srel &&
        this.et[r] === et
      )
        return r;
      i = (i + 1) & m;
    }
  }

  /** The live row of this exact tuple, or NONE. */
  findLive(et: number, eid: number, rel: number, st: number, sid: number, srel: number): number {
    const b = this.lBuckets;
    let r = b[hash6(et, eid, rel, st, sid, srel) & this.hashMask & (b.length - 1)];
    while (r !== NONE) {
      if (
        this.eid[r] === eid &&
        this.sid[r] === sid &&
        this.rel[r] === rel &&
        this.et[r] === et &&
        this.st[r] === st &&
        this.srel[r] === srel
      )
        return r;
      r = this.nextL[r];
    }
    return NONE;
  }

  // writes

  /** Appends a live row (the caller checked that the tuple is not live) created at `tx`. */
  add(
    et: number,
    eid: number,
    rel: number,
    st: number,
    sid: number,
    srel: number,
    tx: number,
    expires: number,
  ): number {
    if (this.n === this.et.length) this.resize(nextCapacity(this.et.length, this.n + 1));
    if ((this.eGroups + 1) * 2 > this.eSlots.length) this.eSlots = this.rehashEntity(this.eSlots.length * 2);
    if ((this.sGroups + 1) * 2 > this.sSlots.length) this.sSlots = this.rehashSubject(this.sSlots.length * 2);
    if (this.liveCount + 1 > this.lBuckets.length) this.rehashLive(this.lBuckets.length * 2);
    const r = this.n++;
    this.et[r] = et;
    this.eid[r] = eid;
    this.rel[r] = rel;
    this.st[r] = st;
    this.sid[r] = sid;
    this.srel[r] = srel;
    this.created[r] = tx;
    this.deleted[r] = LIVE;
    this.id[r] = ++this.seq;
    this.expires[r] = expires;
    this.linkEntity(r);
    this.linkSubject(r);
    this.linkLive(r);
    return r;
  }

  /** Marks a live row deleted at `tx`. */
  remove(r: number, tx: number): void {
    this.deleted[r] = tx;
    const b = this.lBuckets;
    const i = this.liveHash(r) & (b.length - 1);
    let p = b[i];
    if (p === r) b[i] = this.nextL[r];
    else {
      while (this.nextL[p] !== r) p = this.nextL[p];
      this.nextL[p] = this.nextL[r];
    }
    this.nextL[r] = NONE;
    this.liveCount--;
  }

  private liveHash(r: number): number {
    return hash6(this.et[r], this.eid[r], this.rel[r], this.st[r], this.sid[r], this.srel[r]) & this.hashMask;
  }

  private linkEntity(r: number): void {
    const slots = this.eSlots;
    const m = slots.length - 1;
    const et = this.et[r];
    const eid = this.eid[r];
    const rel = this.rel[r];
    let i = hash3(et, eid, rel) & this.hashMask & m;
    for (;;) {
      const t = slots[i];
      if (t === NONE) {
        slots[i] = r;
        this.nextE[r] = r;
        this.eGroups++;
        return;
      }
      if (this.eid[t] === eid && this.rel[t] === rel && this.et[t] === et) {
        this.nextE[r] = this.nextE[t];
        this.nextE[t] = r;
        slots[i] = r;
        return;
      }
      i = (i + 1) & m;
    }
  }

  private linkSubject(r: number): void {
    const slots = this.sSlots;
    const m = slots.length - 1;
    const st = this.st[r];
    const sid = this.sid[r];
    const srel = this.srel[r];
    const et = this.et[r];
    const rel = this.rel[r];
    let i = hash5(st, sid, srel, et, rel) & this.hashMask & m;
    for (;;) {
      const t = slots[i];
      if (t === NONE) {
        slots[i] = r;
        this.nextS[r] = r;
        this.sGroups++;
        return;
      }
      if (
        this.sid[t] === sid &&
        this.rel[t] === rel &&
        this.st[t] === st &&
        this.srel[t] === srel &&
        this.et[t] === et
      ) {
        this.nextS[r] = this.nextS[t];
        this.nextS[t] = r;
        slots[i] = r;
        return;
      }
      i = (i + 1) & m;
    }
  }

  private linkLive(r: number): void {
    const b = this.lBuckets;
    const i = this.liveHash(r) & (b.length - 1);
    this.nextL[r] = b[i];
    b[i] = r;
    this.liveCount++;
  }

  private rehashEntity(size: number): Int32Array {
    const old = this.eSlots;
    const slots = emptySlots(size);
    const m = size - 1;
    for (let k = 0; k < old.length; k++) {
      const r = old[k];
      if (r === NONE) continue;
      let i = hash3(this.et[r], this.eid[r], this.rel[r]) & this.hashMask & m;
      while (slots[i] !== NONE) i = (i + 1) & m;
      slots[i] = r;
    }
    return slots;
  }

  private rehashSubject(size: number): Int32Array {
    const old = this.sSlots;
    const slots = emptySlots(size);
    const m = size - 1;
    for (let k = 0; k < old.length; k++) {
      const r = old[k];
      if (r === NONE) continue;
      let i = hash5(this.st[r], this.sid[r], this.srel[r], this.et[r], this.rel[r]) & this.hashMask & m;
      while (slots[i] !== NONE) i = (i + 1) & m;
      slots[i] = r;
    }
    return slots;
  }

  private rehashLive(size: number): void {
    this.lBuckets = emptySlots(size);
    this.liveCount = 0;
    for (let r = 0; r < this.n; r++) if (this.deleted[r] === LIVE) this.linkLive(r);
  }

  // gc

  /**
   * Drops the rows deleted at or before `horizon`, keeping the order of the others; returns how many were
   * dropped. The indexes are stale until `reindex` (the caller may renumber strings in between).
   */
  compact(horizon: number): number {
    const n = this.n;
    let w = 0;
    for (let r = 0; r < n; r++) {
      if (this.deleted[r] <= horizon) continue;
      if (w !== r) {
        this.et[w] = this.et[r];
        this.eid[w] = this.eid[r];
        this.rel[w] = this.rel[r];
        this.st[w] = this.st[r];
        this.sid[w] = this.sid[r];
        this.srel[w] = this.srel[r];
        this.created[w] = this.created[r];
        this.deleted[w] = this.deleted[r];
        this.id[w] = this.id[r];
        this.expires[w] = this.expires[r];
      }
      w++;
    }
    this.n = w;
    const cap = nextCapacity(64, Math.ceil(w * 1.25));
    if (cap < this.et.length) this.resize(cap);
    return n - w;
  }

  /** Renumbers the string columns (old number -> new number). */
  remapStrings(remap: Int32Array): void {
    for (let r = 0; r < this.n; r++) {
      this.et[r] = remap[this.et[r]];
      this.eid[r] = remap[this.eid[r]];
      this.rel[r] = remap[this.rel[r]];
      this.st[r] = remap[this.st[r]];
      this.sid[r] = remap[this.sid[r]];
      this.srel[r] = remap[this.srel[r]];
    }
  }

  /** Marks every string number the rows use. */
  markStrings(used: Uint8Array): void {
    for (let r = 0; r < this.n; r++) {
      used[this.et[r]] = 1;
      used[this.eid[r]] = 1;
      used[this.rel[r]] = 1;
      used[this.st[r]] = 1;
      used[this.sid[r]] = 1;
      used[this.srel[r]] = 1;
    }
  }

  /** Rebuilds every index from the rows (in row order, so chains keep insertion order). */
  reindex(): void {
    const size = pow2(this.n * 2);
    this.eSlots = emptySlots(Math.min(size, pow2(this.eGroups * 2)));
    this.sSlots = emptySlots(Math.min(size, pow2(this.sGroups * 2)));
    this.eGroups = 0;
    this.sGroups = 0;
    let live = 0;
    for (let r = 0; r < this.n; r++) if (this.deleted[r] === LIVE) live++;
    this.lBuckets = emptySlots(pow2(live));
    this.liveCount = 0;
    for (let r = 0; r < this.n; r++) {
      if ((this.eGroups + 1) * 2 > this.eSlots.length)
        this.eSlots = this.rehashEntity(this.eSlots.length * 2);
      if ((this.sGroups + 1) * 2 > this.sSlots.length)
        this.sSlots = this.rehashSubject(this.sSlots.length * 2);
      this.linkEntity(r);
      this.linkSubject(r);
      if (this.deleted[r] === LIVE) this.linkLive(r);
    }
  }
}
