/** Rewrites the settings tables of the READMEs from the settings (`pnpm --filter @pemba/core run settings-docs`). */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { README_SECTIONS, withSettingsTable } from "../src/settings/readme-sections.ts";

const root = join(import.meta.dirname, "../../..");
for (const { file, runtime } of README_SECTIONS) {
  const path = join(root, file);
  const before = readFileSync(path, "utf8");
  const after = withSettingsTable(before, runtime);
  if (after !== before) writeFileSync(path, after);
  process.stdout.write(`${file}: ${after === before ? "up to date" : "rewritten"}\n`);
}
