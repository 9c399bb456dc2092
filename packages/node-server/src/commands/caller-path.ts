import { resolve } from "node:path";

/**
 * A path the user typed, as an absolute path. The root `pnpm pemba` script runs in the repository root, and pnpm
 * names the directory the user ran it from INIT_CWD; run any other way (`node .../pemba.mjs`), the process's own
 * working directory counts. INIT_CWD alone is no sign of `pnpm pemba`: every script pnpm runs, and every process
 * it starts, inherits it.
 */
export function callerPath(path: string): string {
  const env = process.env;
  const viaPnpmPemba = env.npm_lifecycle_event === "pemba" && env.npm_package_name === "pemba";
  return resolve((viaPnpmPemba && env.INIT_CWD) || process.cwd(), path);
}
