/**
 * vitest globalSetup of the cli project: builds packages/cli/dist once, so the tests' `npm pack` runs (whose prepack
 * script finds it up to date) never build the same folder at the same time.
 */
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";

export default function setup(): void {
  const cli = resolve(import.meta.dirname, "..");
  execFileSync(
    process.execPath,
    [resolve(cli, "../node-server/scripts/build.mjs"), "--quiet", "--outdir", resolve(cli, "dist")],
    { stdio: "inherit" },
  );
}
