/** Small builders for store tests: `tuple("doc:1#viewer@group:g#member")`, `attr("doc:1$public", ...)`. */
import type { Attribute, AttributeValue, Tuple } from "../../model.ts";
import { tupleKey } from "../../model.ts";

export function tuple(text: string): Tuple {
  const m = /^([^:]+):([^#]+)#([^@]+)@([^:]+):([^#]+)(?:#(.+))?$/.exec(text);
  if (!m) throw new Error(`bad tuple text: ${text}`);
  return {
    entity: { type: m[1], id: m[2] },
    relation: m[3],
    subject: { type: m[4], id: m[5], relation: m[6] ?? "" },
  };
}

export function attr(text: string, value: AttributeValue): Attribute {
  const m = /^([^:]+):([^$]+)\$(.+)$/.exec(text);
  if (!m) throw new Error(`bad attribute text: ${text}`);
  return { entity: { type: m[1], id: m[2] }, attribute: m[3], value };
}

/** Tuples as sorted text keys, for order-independent comparisons. */
export const keys = (tuples: readonly Tuple[]): string[] => tuples.map(tupleKey).sort();
