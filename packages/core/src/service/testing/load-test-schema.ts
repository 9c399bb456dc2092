/**
 * The schema of Permify's own load test (v1.6.9 / v1.3: users, contents, interactions) and its seed data in
 * miniature: the same tuples and attributes per id as the seed script, for `count` ids.
 */
import type { Attribute, Tuple } from "../../model.ts";

export const LOAD_TEST_SCHEMA = `entity user {
  relation self @user
  relation follower @user
  relation blocked @user
  attribute is_public boolean
  permission view = self or (is_public or follower) not blocked
}

entity content {
  relation owner @user
  attribute is_public boolean
  permission view = owner.self or (is_public or owner.follower) not owner.blocked
}

entity interaction {
  relation creator @user
  relation parent @content
  permission view = creator.self or (creator.view and parent.view)
}`;

const rel = (type: string, id: string, relation: string, subjectType: string, subjectId: string): Tuple => ({
  entity: { type, id },
  relation,
  subject: { type: subjectType, id: subjectId, relation: "" },
});

/** The seed script's rows for ids 0 .. count-1 (user i follows... i+1 follows i, i+2 is blocked, i % 4 public). */
export function loadTestData(count: number): { tuples: Tuple[]; attributes: Attribute[] } {
  const tuples: Tuple[] = [];
  const attributes: Attribute[] = [];
  for (let i = 0; i < count; i++) {
    const id = String(i);
    const next = String((i + 1) % count);
    const blocked = String((i + 2) % count);
    const value = { type: "ATTRIBUTE_TYPE_BOOLEAN" as const, data: i % 4 === 0 };
    tuples.push(
      rel("user", id, "self", "user", id),
      rel("user", id, "follower", "user", next),
      rel("user", id, "blocked", "user", blocked),
      rel("content", id, "owner", "user", id),
      rel("interaction", id, "creator", "user", id),
      rel("interaction", id, "parent", "content", id),
    );
    attributes.push(
      { entity: { type: "user", id }, attribute: "is_public", value },
      { entity: { type: "content", id }, attribute: "is_public", value },
    );
  }
  return { tuples, attributes };
}

/**
 * The seed data's answer for `view` of content or interaction `entity` to user `user` (both decide the same:
 * interaction i's creator and parent are user i and content i), with `count` ids.
 */
export const expectedView = (count: number, entity: number, user: number): boolean =>
  user === entity || ((entity % 4 === 0 || user === (entity + 1) % count) && user !== (entity + 2) % count);

/** (entity, user) pairs that cover self, public, follower, blocked and nothing, for checks of the seed data. */
export const VIEW_PAIRS: readonly (readonly [number, number])[] = [
  [0, 0],
  [4, 9],
  [5, 6],
  [5, 7],
  [8, 10],
  [12, 13],
];
