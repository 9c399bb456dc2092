/**
 * The per-request entry table: every (slot, id) pair a question asked about, where the slot names `type#name` (see
 * ReadRef), gets a small integer. The other per-request tables (reads, memo) are columns indexed by entry, so the
 * hot path builds no string keys.
 */
import type { CompiledSchema, ReadRef } from "../../compile/index.ts";

/** Entries kept in plain arrays (linear scan) before an index by slot and id is built. */
const SMALL = 32;

export class EntryTable {
  schema!: CompiledSchema;
  /** Entries 0 .. n - 1 (the arrays may be longer: `reset` keeps their capacity). */
  n = 0;
  readonly slots: number[] = [];
  readonly ids: string[] = [];
  #bySlot: (Map<string, number> | undefined)[] | undefined = undefined;
  /** Refs of names the compiled schema does not know (slots after the schema's). */
  #extraRefs: Map<string, ReadRef> | undefined = undefined;
  #extraSlots: ReadRef[] | undefined = undefined;

  reset(schema: CompiledSchema): void {
    this.schema = schema;
    this.n = 0;
    this.#bySlot = undefined;
    this.#extraRefs = undefined;
    this.#extraSlots = undefined;
  }

  /** The entry of (slot, id), added when missing: a new entry is `n - 1` after the call. */
  entry(slot: number, id: string): number {
    const slots = this.slots;
    const ids = this.ids;
    const n = this.n;
    const bySlot = this.#bySlot;
    if (bySlot === undefined) {
      for (let i = 0; i < n; i++) if (slots[i] === slot && ids[i] === id) return i;
      this.#add(slot, id);
      if (n + 1 >= SMALL) this.#index();
      return n;
    }
    let byId = bySlot[slot];
    if (byId === undefined) {
      byId = new Map();
      bySlot[slot] = byId;
    }
    const found = byId.get(id);
    if (found !== undefined) return found;
    this.#add(slot, id);
    byId.set(id, n);
    return n;
  }

  /** Appends entry n (over whatever an earlier question left there). */
  #add(slot: number, id: string): void {
    const e = this.n++;
    if (e === this.slots.length) {
      this.slots.push(slot);
      this.ids.push(id);
    } else {
      this.slots[e] = slot;
      this.ids[e] = id;
    }
  }

  #index(): void {
    const bySlot: (Map<string, number> | undefined)[] = [];
    const slots = this.slots;
    const ids = this.ids;
    for (let i = 0; i < this.n; i++) {
      let byId = bySlot[slots[i]];
      if (byId === undefined) {
        byId = new Map();
        bySlot[slots[i]] = byId;
      }
      byId.set(ids[i], i);
    }
    this.#bySlot = bySlot;
  }

  /** The ref of a read by name (a slot of its own when the schema has no such member). */
  readRef(type: string, name: string): ReadRef {
    const ref = this.schema.entities.get(type)?.refs.get(name);
    if (ref !== undefined) return ref;
    if (this.#extraRefs === undefined || this.#extraSlots === undefined) {
      this.#extraRefs = new Map();
      this.#extraSlots = [];
    }
    const key = `${type}\u0000${name}`;
    let extra = this.#extraRefs.get(key);
    if (extra === undefined) {
      extra = { slot: this.schema.slots.length + this.#extraSlots.length, type, name };
      this.#extraRefs.set(key, extra);
      this.#extraSlots.push(extra);
    }
    return extra;
  }

  /** The ref (type, name) of a slot. */
  refOf(slot: number): ReadRef {
    const slots = this.schema.slots;
    return slot < slots.length ? slots[slot] : (this.#extraSlots as ReadRef[])[slot - slots.length];
  }
}
