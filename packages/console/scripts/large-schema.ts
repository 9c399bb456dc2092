/** The 2,000-line schema of the diagnostics budget (scripts/bench.ts). */

/** `a`, `b`, ..., `z`, `ba`, ... (schema identifiers have no digits). */
const letters = (n: number): string =>
  (n < 26 ? "" : letters(Math.floor(n / 26))) + String.fromCharCode(97 + (n % 26));

/** A schema of exactly `lines` lines: entities with relations, an attribute and permissions, and one rule. */
export function largeSchema(lines: number): string {
  const out = ["entity user {}", "", "entity group {", "  relation member @user @group#member", "}", ""];
  const rule = ["rule allowed(public boolean, level integer) {", "  public == true && level > 2", "}"];
  for (let i = 0; out.length + 10 + rule.length <= lines; i++) {
    const parent = i === 0 ? "group" : `e${letters(i - 1)}`;
    const parentPermission = i === 0 ? "member" : "view";
    out.push(
      `entity e${letters(i)} {`,
      "  relation owner @user",
      `  relation parent @${parent}`,
      "  relation viewer @user @group#member",
      "  attribute public boolean",
      "  attribute level integer",
      `  permission edit = owner or parent.${i === 0 ? "member" : "edit"}`,
      `  permission view = edit or viewer or parent.${parentPermission} or allowed(public, level)`,
      "}",
      "",
    );
  }
  while (out.length + rule.length < lines) out.push("// padding");
  out.push(...rule);
  return out.join("\n");
}
