/**
 * The memory store's attributes of one tenant, columnar like the tuples (see tuples.ts). Values are kept
 * as frozen AttributeValue objects; the two boolean values are shared.
 *
 * Indexes:
 * - by (entity type, entity id, name): an open-addressing table whose slot holds the newest row; `nextA` links
 *   each row to the one written before it (history newest first, so the live row, if any, is the newest).
 * - by (entity type, name): the newest row of a circular list (`nextT`), for reads without entity ids.
 */
import type { AttributeValue } from "../../model.ts";
import { ColumnBlock, emptySlots, hash2, hash3, LIVE, NONE, nextCapacity, pow2 } from "./columns.ts";

const TRUE_VALUE: AttributeValue = Object.freeze({ type: "ATTRIBUTE_TYPE_BOOLEAN", data: true });
const FALSE_VALUE: AttributeValue = Object.freeze({ type: "ATTRIBUTE_TYPE_BOOLEAN", data: false });

/** A frozen copy of `v` (the shared object for booleans). */
export function frozenValue(v: AttributeValue): AttributeValue {
  if (v.type === "ATTRIBUTE_TYPE_BOOLEAN" && typeof v.data === "boolean")
    return v.data ? TRUE_VALUE : FALSE_VALUE;
  return Object.freeze({
    type: v.type,
    data: Array.isArray(v.data) ? (Object.freeze([...v.data]) as AttributeValue["data"]) : v.data,
  });
}

export class AttributeTable {
  n = 0;
  et: Int32Array;
  eid: Int32Array;
  name: Int32Array;
  created: Int32Array;
  deleted: Int32Array;
  id: Float64Array;
  /** When the row stops counting (ms since the epoch); NEVER (+Infinity) when it does not expire. */
  expires: Float64Array;
  values: AttributeValue[] = [];
  nextA: Int32Array;
  nextT: Int32Array;
  aSlots: Int32Array;
  aGroups = 0;
  tSlots: Int32Array;
  tGroups = 0;
  private seq = 0;
  private readonly hashMask: number;

  constructor(hashMask = -1) {
    this.hashMask = hashMask;
    const none = new Int32Array(0);
    this.et = this.eid = this.name = this.created = this.deleted = this.nextA = this.nextT = none;
    this.id = this.expires = new Float64Array(0);
    this.resize(64);
    this.aSlots = emptySlots(16);
    this.tSlots = emptySlots(16);
  }

  private resize(cap: number): void {
    const b = new ColumnBlock(cap, 2 * 8 + 7 * 4, this.n);
    this.id = b.f64(this.id);
    this.expires = b.f64(this.expires);
    this.et = b.i32(this.et);
    this.eid = b.i32(this.eid);
    this.name = b.i32(this.name);
    this.created = b.i32(this.created);
    this.deleted = b.i32(this.deleted);
    this.nextA = b.i32(this.nextA);
    this.nextT = b.i32(this.nextT);
  }

  /** The newest row (any state) of the attribute, NONE when there is none; older rows follow on `nextA`. */
  newest(et: number, eid: number, name: number): number {
    const slots = this.aSlots;
    const m = slots.length - 1;
    let i = hash3(et, eid, name) & this.hashMask & m;
    for (;;) {
      const r = slots[i];
      if (r === NONE) return NONE;
      if (this.eid[r] === eid && this.name[r] === name && this.et[r] === et) return r;
      i = (i + 1) & m;
    }
  }

  /** The live row of the attribute, or NONE. */
  live(et: number, eid: number, name: number): number {
    const r = this.newest(et, eid, name);
    return r !== NONE && this.deleted[r] === LIVE ? r : NONE;
  }

  /** The newest row of the (type, name) circular list, NONE when there is none; walk `nextT` from it. */
  typeTail(et: number, name: number): number {
    const slots = this.tSlots;
    const m = slots.length - 1;
    let i = hash2(et, name) & this.hashMask & m;
    for (;;) {
      const r = slots[i];
      if (r === NONE) return NONE;
      if (this.name[r] === name && this.et[r] === et) return r;
      i = (i + 1) & m;
    }
  }

  /** Appends a live row (the caller deleted the previous live value) created at `tx`. */
  add(et: number, eid: number, name: number, value: AttributeValue, tx: number, expires: number): number {
    if (this.n === this.et.length) this.resize(nextCapacity(this.et.length, this.n + 1));
    this.growIndexes();
    const r = this.n++;
    this.et[r] = et;
    this.eid[r] = eid;
    this.name[r] = name;
    this.created[r] = tx;
    this.deleted[r] = LIVE;
    this.id[r] = ++this.seq;
    this.expires[r] = expires;
    this.values[r] = value;
    this.link(r);
    return r;
  }

  private growIndexes(): void {
    if ((this.aGroups + 1) * 2 > this.aSlots.length) this.aSlots = this.rehashA(this.aSlots.length * 2);
    if ((this.tGroups + 1) * 2 > this.tSlots.length) this.tSlots = this.rehashT(this.tSlots.length * 2);
  }

  private link(r: number): void {
    const et = this.et[r];
    const eid = this.eid[r];
    const name = this.name[r];
    let slots = this.aSlots;
    let m = slots.length - 1;
    let i = hash3(et, eid, name) & this.hashMask & m;
    for (;;) {
      const t = slots[i];
      if (t === NONE) {
        this.nextA[r] = NONE;
        this.aGroups++;
        break;
      }
      if (this.eid[t] === eid && this.name[t] === name && this.et[t] === et) {
        this.nextA[r] = t;
        break;
      }
      i = (i + 1) & m;
    }
    slots[i] = r;
    slots = this.tSlots;
    m = slots.length - 1;
    i = hash2(et, name) & this.hashMask & m;
    for (;;) {
      const t = slots[i];
      if (t === NONE) {
        this.nextT[r] = r;
        this.tGroups++;
        break;
      }
      if (this.name[t] === name && this.et[t] === et) {
        this.nextT[r] = this.nextT[t];
        this.nextT[t] = r;
        break;
      }
      i = (i + 1) & m;
    }
    slots[i] = r;
  }

  private rehashA(size: number): Int32Array {
    const old = this.aSlots;
    const slots = emptySlots(size);
    const m = size - 1;
    for (let k = 0; k < old.length; k++) {
      const r = old[k];
      if (r === NONE) continue;
      let i = hash3(this.et[r], this.eid[r], this.name[r]) & this.hashMask & m;
      while (slots[i] !== NONE) i = (i + 1) & m;
      slots[i] = r;
    }
    return slots;
  }

  private rehashT(size: number): Int32Array {
    const old = this.tSlots;
    const slots = emptySlots(size);
    const m = size - 1;
    for (let k = 0; k < old.length; k++) {
      const r = old[k];
      if (r === NONE) continue;
      let i = hash2(this.et[r], this.name[r]) & this.hashMask & m;
      while (slots[i] !== NONE) i = (i + 1) & m;
      slots[i] = r;
    }
    return slots;
  }

  // gc (see TupleTable)

  compact(horizon: number): number {
    const n = this.n;
    let w = 0;
    for (let r = 0; r < n; r++) {
      if (this.deleted[r] <= horizon) continue;
      if (w !== r) {
        this.et[w] = this.et[r];
        this.eid[w] = this.eid[r];
        this.name[w] = this.name[r];
        this.created[w] = this.created[r];
        this.deleted[w] = this.deleted[r];
        this.id[w] = this.id[r];
        this.expires[w] = this.expires[r];
        this.values[w] = this.values[r];
      }
      w++;
    }
    this.n = w;
    this.values.length = w;
    const cap = nextCapacity(64, Math.ceil(w * 1.25));
    if (cap < this.et.length) this.resize(cap);
    return n - w;
  }

  remapStrings(remap: Int32Array): void {
    for (let r = 0; r < this.n; r++) {
      this.et[r] = remap[this.et[r]];
      this.eid[r] = remap[this.eid[r]];
      this.name[r] = remap[this.name[r]];
    }
  }

  markStrings(used: Uint8Array): void {
    for (let r = 0; r < this.n; r++) {
      used[this.et[r]] = 1;
      used[this.eid[r]] = 1;
      used[this.name[r]] = 1;
    }
  }

  reindex(): void {
    const size = pow2(this.n * 2);
    this.aSlots = emptySlots(Math.min(size, pow2(this.aGroups * 2)));
    this.tSlots = emptySlots(Math.min(size, pow2(this.tGroups * 2)));
    this.aGroups = 0;
    this.tGroups = 0;
    for (let r = 0; r < this.n; r++) {
      this.growIndexes();
      this.link(r);
    }
  }
}
