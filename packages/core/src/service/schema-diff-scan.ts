/**
 * A schema diff's counts on a store without COUNT statements (memory, the in-memory replica): ONE paged pass over
 * the tenant's live tuples and attributes counts the rows of every removal and every attribute type change at once,
 * and collects the stored ids of the types whose pairs the diff asks. A filtered read per removal would visit every
 * row once per removal (2,000 removals x 200,000 rows); here each row is read once, SCAN_PAGE rows a turn.
 */
import type { Attribute, Tuple } from "../model.ts";
import type { AttributeTypeChange, SchemaRemoval } from "../schema/diff.ts";
import type { Snap, Store } from "../store/store.ts";
import { type DiffWork, SCAN_PAGE } from "./schema-diff-work.ts";

export interface RemovalCounts {
  tuples: number;
  attributes: number;
}

export interface TypeChangeCounts {
  values: number;
  mismatched: number;
}

export interface ScanResult {
  removed: RemovalCounts[];
  typeChanges: TypeChangeCounts[];
  /** Sorted stored ids per asked type: entity ids and subject ids of tuples, entity ids of attributes. */
  ids: Map<string, string[]>;
}

const key = (...parts: string[]) => parts.join("\u0000");

/** Index of the removals by what a row must match, and the counters they add to. */
function indexRemovals(removals: SchemaRemoval[]) {
  const entity = new Map<string, number>();
  const relation = new Map<string, number>();
  const asSubject = new Map<string, number>();
  const relationSubject = new Map<string, number>();
  const attribute = new Map<string, number>();
  removals.forEach((r, i) => {
    switch (r.kind) {
      case "ENTITY":
        entity.set(r.entity, i);
        return;
      case "RELATION":
        relation.set(key(r.entity, r.name), i);
        asSubject.set(key(r.entity, r.name), i);
        return;
      case "PERMISSION":
        asSubject.set(key(r.entity, r.name), i);
        return;
      case "ATTRIBUTE":
        attribute.set(key(r.entity, r.name), i);
        return;
      case "RELATION_SUBJECT": {
        const [type, subjectRelation = ""] = (r.subject ?? "").split("#");
        relationSubject.set(key(r.entity, r.name, type!, subjectRelation), i);
        return;
      }
    }
  });
  return { entity, relation, asSubject, relationSubject, attribute };
}

export async function scanRows(
  store: Store,
  tenantId: string,
  snap: Snap,
  at: number,
  removals: SchemaRemoval[],
  changes: AttributeTypeChange[],
  idTypes: ReadonlySet<string>,
  work: DiffWork,
): Promise<ScanResult> {
  const removed = removals.map(() => ({ tuples: 0, attributes: 0 }));
  const typeChanges = changes.map(() => ({ values: 0, mismatched: 0 }));
  const index = indexRemovals(removals);
  const changed = new Map(changes.map((c, i) => [key(c.entity, c.attribute), i]));
  const ids = new Map<string, Set<string>>();
  for (const type of idTypes) ids.set(type, new Set());

  const countTuple = (t: Tuple) => {
    const own = index.entity.get(t.entity.type);
    if (own !== undefined) removed[own]!.tuples++;
    // a tuple naming a removed entity type as its subject (its own tuples are counted above)
    const subject = index.entity.get(t.subject.type);
    if (subject !== undefined && t.entity.type !== t.subject.type) removed[subject]!.tuples++;
    const relation = index.relation.get(key(t.entity.type, t.relation));
    if (relation !== undefined) removed[relation]!.tuples++;
    if (t.subject.relation !== "") {
      const named = index.asSubject.get(key(t.subject.type, t.subject.relation));
      if (named !== undefined) removed[named]!.tuples++;
    }
    const relationSubject = index.relationSubject.get(
      key(t.entity.type, t.relation, t.subject.type, t.subject.relation),
    );
    if (relationSubject !== undefined) removed[relationSubject]!.tuples++;
    ids.get(t.entity.type)?.add(t.entity.id);
    ids.get(t.subject.type)?.add(t.subject.id);
  };
  const countAttribute = (a: Attribute) => {
    const own = index.entity.get(a.entity.type);
    if (own !== undefined) removed[own]!.attributes++;
    const attribute = index.attribute.get(key(a.entity.type, a.attribute));
    if (attribute !== undefined) removed[attribute]!.attributes++;
    const change = changed.get(key(a.entity.type, a.attribute));
    if (change !== undefined) {
      typeChanges[change]!.values++;
      if (a.value.type !== changes[change]!.to) typeChanges[change]!.mismatched++;
    }
    ids.get(a.entity.type)?.add(a.entity.id);
  };

  let cursor: string | undefined;
  do {
    const page = await store.readTuples(tenantId, snap, {}, SCAN_PAGE, cursor, at);
    work.readRows(page.items.length);
    for (const t of page.items) countTuple(t);
    cursor = page.cursor || undefined;
    await work.yieldTurn();
  } while (cursor !== undefined);
  do {
    const page = await store.readAttributes(tenantId, snap, {}, SCAN_PAGE, cursor, at);
    work.readRows(page.items.length);
    for (const a of page.items) countAttribute(a);
    cursor = page.cursor || undefined;
    await work.yieldTurn();
  } while (cursor !== undefined);

  const sorted = new Map<string, string[]>();
  for (const [type, set] of ids) sorted.set(type, [...set].sort());
  return { removed, typeChanges, ids: sorted };
}
