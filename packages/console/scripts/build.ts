/**
 * Builds the browser console: app/main.ts bundled with esbuild (CodeMirror, dagre and @pemba/core's
 * runtime-neutral engine, minified) plus app/index.html and app/console.css, written as one generated module,
 * generated/assets.ts, that `@pemba/console` exports to the Node server and the Worker.
 *
 *   node --experimental-strip-types --no-warnings packages/console/scripts/build.ts [--check]
 *
 * `--check` builds in memory and exits 1 when the committed module differs (test/assets.test.ts runs it).
 */

import { readFileSync, writeFileSync } from "node:fs";
import { buildConsoleFiles, renderAssetsModule } from "./bundle.ts";

const target = new URL("../generated/assets.ts", import.meta.url);
const text = renderAssetsModule(await buildConsoleFiles());
if (process.argv.includes("--check")) {
  const current = readFileSync(target, "utf8");
  if (current !== text) {
    console.error("packages/console/generated/assets.ts is stale: run pnpm --filter @pemba/console build");
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
  console.log(`wrote ${target.pathname} (${text.length} bytes)`);
}
