/** vitest globalSetup: builds the bundled CLI once (packages/node-server/dist/pemba.mjs, what `pnpm pemba` runs). */
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";

export default function setup(): void {
  execFileSync(process.execPath, [resolve(import.meta.dirname, "../scripts/build.mjs"), "--quiet"], {
    stdio: "inherit",
  });
}
