/** Shared fixtures of the validation-runner tests: one schema and a builder for inline validation files. */

export const VALIDATION_TEST_SCHEMA = `
entity user {}
entity org {
  relation member @user
}
entity doc {
  relation owner @user
  relation org @org
  attribute public boolean
  attribute amount_limit integer
  permission view = owner or org.member or public
  permission edit = owner
  permission spend = owner and within_limit(amount_limit)
}
rule within_limit(amount_limit integer) {
  context.data.amount <= amount_limit
}`;

/** A file with the shared schema, given relationships/attributes and scenario YAML (indented by the caller). */
export function validationTestFile(parts: {
  relationships?: string[];
  attributes?: string[];
  scenarios: string;
}): string {
  const list = (items: string[] = []) => items.map((i) => `  - "${i}"`).join("\n");
  return [
    "schema: |-",
    ...VALIDATION_TEST_SCHEMA.trim()
      .split("\n")
      .map((l) => `  ${l}`),
    "relationships:",
    list(parts.relationships ?? ["doc:1#owner@user:1", "doc:2#org@org:1", "org:1#member@user:2"]),
    "attributes:",
    list(parts.attributes ?? ["doc:3$public|boolean:true", "doc:1$amount_limit|integer:100"]),
    "scenarios:",
    parts.scenarios,
  ].join("\n");
}
/** Line number (1-based) of the first line of `text` that contains `needle`. */
export const lineOf = (text: string, needle: string): number =>
  text.split("\n").findIndex((l) => l.includes(needle)) + 1;
