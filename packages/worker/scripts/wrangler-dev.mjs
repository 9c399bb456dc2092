/**
 * `pnpm --filter @pemba/worker run dev [wrangler dev flags]`: runs `wrangler dev` with the repository's
 * wrangler.toml, and stops it on SIGINT or SIGTERM (Ctrl-C, or `kill <pnpm pid>`: pnpm passes the signal on) with
 * exit status 0. Wrangler itself answers a SIGTERM with status 143, which pnpm reports as a failed script; a stop
 * that was asked for is not a failure. Any other end of wrangler keeps its status.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve("wrangler/package.json")), "wrangler-dist", "cli.js");
const config = join(import.meta.dirname, "../../../wrangler.toml");
const child = spawn(process.execPath, [cli, "dev", "--config", config, ...process.argv.slice(2)], {
  stdio: "inherit",
});

let stopAsked = false;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    stopAsked = true;
    child.kill(signal);
  });
}
child.on("exit", (code, signal) => {
  process.exit(stopAsked ? 0 : (code ?? (signal === null ? 1 : 128)));
});
