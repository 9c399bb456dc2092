/**
 * Schemas at the write limits (schema-limits.ts), for the tests and benchmarks of bounded schema writes: distinct per
 * `salt`, so no cache can answer one for another.
 */
import { MAX_SCHEMA_BYTES, MAX_SCHEMA_RULE_CHARS } from "../schema-limits.ts";

/** A schema name of letters only (the DSL allows no digits): 0 -> a, 25 -> z, 26 -> ab, ... */
export function letterName(i: number): string {
  let s = "";
  do {
    s += String.fromCharCode(97 + (i % 26));
    i = Math.floor(i / 26);
  } while (i > 0);
  return s;
}

/** `head` followed by entities (relations, an attribute, a permission) up to `bytes` (ASCII). */
export function entitiesSchema(salt: number, bytes = MAX_SCHEMA_BYTES, head = "entity user {}\n"): string {
  const parts = [head];
  let size = head.length;
  for (let i = 0; ; i++) {
    const e = `e_${letterName(salt)}_${letterName(i)}`;
    const prev = i === 0 ? "user" : `e_${letterName(salt)}_${letterName(i - 1)}`;
    const next = `entity ${e} {\n relation owner @user\n relation parent @${prev}\n attribute public boolean\n permission view = owner or public\n}\n`;
    if (size + next.length > bytes) return parts.join("");
    parts.push(next);
    size += next.length;
  }
}

/**
 * As much CEL as one schema may hold, as costly as the limits allow: 240-term sums (nesting just under the limit)
 * and 80-term && chains; then entities up to `bytes` (0: none).
 */
export function celHeavySchema(salt: number, bytes = 0): string {
  let text = "entity user {}\nentity doc {\n attribute x integer\n permission p = r_a(x)\n}\n";
  let chars = 0;
  for (let i = 0; ; i++) {
    const body =
      i % 2 === 0
        ? `x${" + 1".repeat(240)} > ${salt}`
        : Array.from({ length: 80 }, (_, j) => `x > ${salt + j}`).join(" && ");
    if (chars + body.length > MAX_SCHEMA_RULE_CHARS) break;
    chars += body.length;
    text += `rule r_${letterName(i)}(x integer) {\n ${body}\n}\n`;
  }
  return bytes > 0 ? entitiesSchema(salt, bytes, text) : text;
}
