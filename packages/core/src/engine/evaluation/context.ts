/**
 * A request's contextual data: contextual tuples are added to the stored tuples of the same read, contextual
 * attributes come before stored ones, and `data` is what rules read as `context.data`.
 */
import { type Attribute, type Context, type Tuple, tupleKey } from "../../model.ts";

/** `data` of a request without context (rules only read it). */
export const NO_DATA: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

export const readKey = (type: string, id: string, name: string) => `${type}\u0000${id}\u0000${name}`;

/** The contextual tuples and attributes of a request that has any, by read key. */
export class ContextualData {
  readonly #tuples: Map<string, Tuple[]> | undefined;
  readonly #attributes: Map<string, Attribute> | undefined;

  constructor(ctx: Context) {
    if (ctx.tuples.length > 0) {
      const tuples = new Map<string, Tuple[]>();
      // one set of every tuple seen: de-duplication stays linear when many tuples share a read
      const seen = new Set<string>();
      for (const t of ctx.tuples) {
        const key = tupleKey(t);
        if (seen.has(key)) continue;
        seen.add(key);
        const k = readKey(t.entity.type, t.entity.id, t.relation);
        const list = tuples.get(k);
        if (list) list.push(t);
        else tuples.set(k, [t]);
      }
      this.#tuples = tuples;
    }
    if (ctx.attributes.length > 0) {
      const attributes = new Map<string, Attribute>();
      // Permify reads the first contextual value of an entity's attribute; later duplicates are ignored
      for (const a of ctx.attributes) {
        const key = readKey(a.entity.type, a.entity.id, a.attribute);
        if (!attributes.has(key)) attributes.set(key, a);
      }
      this.#attributes = attributes;
    }
  }

  /** The context of `ctx`; undefined when it has no tuples and no attributes (nothing to merge). */
  static of(ctx: Context | undefined): ContextualData | undefined {
    return ctx && (ctx.tuples.length > 0 || ctx.attributes.length > 0) ? new ContextualData(ctx) : undefined;
  }

  get hasTuples(): boolean {
    return this.#tuples !== undefined;
  }

  /** Stored tuples of the read `key` ∪ its contextual tuples, without duplicates. */
  merge(stored: readonly Tuple[], key: string): readonly Tuple[] {
    const extra = this.#tuples?.get(key);
    if (extra === undefined) return stored;
    const seen = new Set(stored.map(tupleKey));
    const merged = [...stored];
    for (const t of extra) if (!seen.has(tupleKey(t))) merged.push(t);
    return merged;
  }

  attribute(type: string, id: string, name: string): Attribute | undefined {
    return this.#attributes?.get(readKey(type, id, name));
  }
}
