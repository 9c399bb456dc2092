/**
 * Writes a random schema with data and check questions (loadtest/lib/generate.ts), like flagd's ff_gen.go:
 *
 *   node --experimental-strip-types loadtest/generate.ts [--entities 10] [--ids 10000] [--kind mixed]
 *        [--checks 5000] [--seed 1] [--out random.json]
 *
 * The file holds { options, schema, tuples, attributes, checks } and is what k6/flagd-check.js reads (DATA_FILE).
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { generate, KINDS, type Kind } from "./lib/generate.ts";

const { values } = parseArgs({
  options: {
    entities: { type: "string", default: "10" },
    ids: { type: "string", default: "10000" },
    kind: { type: "string", default: "mixed" },
    checks: { type: "string", default: "5000" },
    seed: { type: "string", default: "1" },
    out: { type: "string", default: "random.json" },
  },
});
const kind = KINDS.find((k) => k === values.kind);
if (kind === undefined) throw new Error(`--kind: one of ${KINDS.join(", ")}`);
const generated = generate({
  entities: Number(values.entities),
  ids: Number(values.ids),
  kind: kind as Kind,
  checks: Number(values.checks),
  seed: Number(values.seed),
});
writeFileSync(values.out!, JSON.stringify(generated));
console.log(
  `${values.out}: ${Number(values.entities)} resource types (${kind}), ${generated.tuples.length} tuples, ${generated.attributes.length} attributes, ${generated.checks.length} checks`,
);
