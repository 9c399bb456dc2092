/** The oldest Node.js major version Pemba runs on (package.json `engines`). Keep this file free of newer APIs. */
export const MINIMUM_NODE_MAJOR = 22;

/** Why this Node.js version cannot run Pemba, or undefined when it can. `version` is `process.versions.node`. */
export function nodeVersionProblem(version: string): string | undefined {
  const major = Number.parseInt(version.split(".")[0] ?? "", 10);
  if (major >= MINIMUM_NODE_MAJOR) return undefined;
  return `Node.js ${MINIMUM_NODE_MAJOR} or newer is required; this is Node.js ${version} (${process.execPath})`;
}
