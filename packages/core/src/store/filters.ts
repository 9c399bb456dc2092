/** Filter semantics shared by every driver: empty strings and empty id lists match anything. */
import type { Attribute, AttributeFilter, Tuple, TupleFilter } from "../model.ts";

export function tupleMatches(f: TupleFilter, t: Tuple): boolean {
  const e = f.entity;
  if (e) {
    if (e.type && e.type !== t.entity.type) return false;
    if (e.ids && e.ids.length > 0 && !e.ids.includes(t.entity.id)) return false;
  }
  if (f.relation && f.relation !== t.relation) return false;
  const s = f.subject;
  if (s) {
    if (s.type && s.type !== t.subject.type) return false;
    if (s.ids && s.ids.length > 0 && !s.ids.includes(t.subject.id)) return false;
    if (s.relation && s.relation !== t.subject.relation) return false;
  }
  return true;
}

export function attributeMatches(f: AttributeFilter, a: Attribute): boolean {
  const e = f.entity;
  if (e) {
    if (e.type && e.type !== a.entity.type) return false;
    if (e.ids && e.ids.length > 0 && !e.ids.includes(a.entity.id)) return false;
  }
  if (f.attributes && f.attributes.length > 0 && !f.attributes.includes(a.attribute)) return false;
  return true;
}
