/** Schema and request builders shared by the Worker tests. */
export const SCHEMA = `
entity user {}

entity organization {
  relation admin @user
  relation member @user
}

entity document {
  relation owner @user
  relation org @organization
  attribute is_public boolean

  permission edit = owner or org.admin
  permission view = edit or org.member or is_public
}
`;

export const tuple = (entity: string, relation: string, subject: string) => {
  const [et, eid] = entity.split(":");
  const [st, sid] = subject.split(":");
  return { entity: { type: et, id: eid }, relation, subject: { type: st, id: sid, relation: "" } };
};

export const checkBody = (entity: string, permission: string, subject: string) => {
  const [et, eid] = entity.split(":");
  const [st, sid] = subject.split(":");
  return {
    metadata: { depth: 20 },
    entity: { type: et, id: eid },
    permission,
    subject: { type: st, id: sid, relation: "" },
  };
};

/** The data the check tests expect: user:1 owns document:1 (org 1: admin user:2, member user:3); doc 2 public. */
export const DATA = {
  metadata: {},
  tuples: [
    tuple("document:1", "owner", "user:1"),
    tuple("document:1", "org", "organization:1"),
    tuple("organization:1", "admin", "user:2"),
    tuple("organization:1", "member", "user:3"),
  ],
  attributes: [{ entity: { type: "document", id: "2" }, attribute: "is_public", value: { boolean: true } }],
};

export const allowed = (count: number) => ({ can: "CHECK_RESULT_ALLOWED", metadata: { check_count: count } });
export const denied = (count: number) => ({ can: "CHECK_RESULT_DENIED", metadata: { check_count: count } });
