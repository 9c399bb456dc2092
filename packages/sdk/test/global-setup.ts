/**
 * vitest globalSetup of the SDK project: builds the `pemba` CLI bundle (the server the integration tests start)
 * and the SDK package itself (dist/, what the package tests pack and install).
 */
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";

export default function setup(): void {
  const repo = resolve(import.meta.dirname, "../../..");
  execFileSync(process.execPath, [resolve(repo, "packages/node-server/scripts/build.mjs"), "--quiet"], {
    stdio: "inherit",
  });
  // --keep-wire-types: the committed src/wire.gen.ts is what test/wire-types.test.ts compares with the schemas.
  execFileSync(
    process.execPath,
    [resolve(repo, "packages/sdk/scripts/build.ts"), "--quiet", "--keep-wire-types"],
    {
      stdio: "inherit",
    },
  );
}
