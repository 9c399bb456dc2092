/**
 * The settings tables in the repository's READMEs: each stands between two marker comments and is rendered from
 * the settings (docs.ts). settings-docs.test.ts fails when one drifts; scripts/settings-docs.ts rewrites them.
 */
import type { Runtime } from "./definition.ts";
import { settingsTable } from "./docs.ts";

export interface ReadmeSection {
  /** Relative to the repository root. */
  file: string;
  runtime: Runtime;
}

export const README_SECTIONS: readonly ReadmeSection[] = [
  { file: "README.md", runtime: "node" },
  { file: "packages/worker/README.md", runtime: "worker" },
];

const begin = (runtime: Runtime) =>
  `<!-- settings:${runtime} (generated from packages/core/src/settings) -->`;
const end = (runtime: Runtime) => `<!-- /settings:${runtime} -->`;

/** The README's text with its settings table rendered anew; throws when the markers are missing. */
export function withSettingsTable(text: string, runtime: Runtime): string {
  const from = text.indexOf(begin(runtime));
  const to = text.indexOf(end(runtime));
  if (from < 0 || to < from) throw new Error(`no ${begin(runtime)} ... ${end(runtime)} section`);
  return `${text.slice(0, from)}${begin(runtime)}\n\n${settingsTable(runtime)}\n\n${text.slice(to)}`;
}
