/** What the SDK's integration tests share: the schema they write and a fetch that records requests. */

/** The schema the SDK tests use: relations with subject sets, attributes, a rule-free permission tree. */
export const SCHEMA = `entity user {}

entity organization {
  relation admin @user
  relation member @user
}

entity document {
  relation org @organization
  relation owner @user
  relation viewer @user @organization#member
  attribute public boolean
  attribute tags string[]
  permission edit = owner or org.admin
  permission view = edit or viewer or public
}
`;

/** A fetch that records every request's path and JSON body. */
export function recordingFetch(): { fetch: typeof fetch; calls: { path: string; body: unknown }[] } {
  const calls: { path: string; body: unknown }[] = [];
  return {
    calls,
    fetch: (input, init) => {
      const url = new URL(String(input));
      calls.push({ path: url.pathname, body: init?.body ? JSON.parse(String(init.body)) : undefined });
      return fetch(input, init);
    },
  };
}
