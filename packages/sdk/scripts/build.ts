/**
 * Builds the publishable package: regenerates src/wire.gen.ts from the server's wire schemas, bundles
 * src/index.ts into dist/index.js (ESM, no dependencies, runs in Node 20+, browsers and Workers), emits
 * dist/*.d.ts with tsc, and reports the browser bundle's size (minified + gzipped).
 *
 *   node packages/sdk/scripts/build.ts [--quiet] [--keep-wire-types]
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { build } from "esbuild";
import { BUNDLE_OPTIONS, measureBrowserBundle, SDK_DIR } from "./bundle-size.ts";
import { generateWireTypes, WIRE_TYPES_FILE } from "./wire-types.ts";

const pkgDir = SDK_DIR;
const dist = join(pkgDir, "dist");
const quiet = process.argv.includes("--quiet");
const log = (line: string) => {
  if (!quiet) process.stdout.write(`${line}\n`);
};

const started = performance.now();
// --keep-wire-types (the test suite's build): leave src/wire.gen.ts as committed, so test/wire-types.test.ts sees drift.
const wire = process.argv.includes("--keep-wire-types") ? undefined : generateWireTypes();
if (wire !== undefined && readFileSync(WIRE_TYPES_FILE, "utf8") !== wire) {
  writeFileSync(WIRE_TYPES_FILE, wire);
  log("sdk build: src/wire.gen.ts regenerated from the wire schemas");
}

rmSync(dist, { recursive: true, force: true });
await build({ ...BUNDLE_OPTIONS, outfile: join(dist, "index.js") });

const tsc = resolve(pkgDir, "../../node_modules/typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(pkgDir, "tsconfig.build.json")], { stdio: "inherit" });
// tsc keeps the sources' `./x.ts` specifiers in declarations; the published files are `./x.js`.
for (const file of readdirSync(dist)) {
  if (!file.endsWith(".d.ts")) continue;
  const path = join(dist, file);
  const text = readFileSync(path, "utf8").replace(/(from\s+"\.\/[\w.-]+)\.ts"/g, '$1.js"');
  writeFileSync(path, text);
}

const browserBundleBytes = await measureBrowserBundle();
log(
  `sdk build: dist/index.js + .d.ts in ${Math.round(performance.now() - started)} ms; browser bundle ` +
    `${(browserBundleBytes.minified / 1024).toFixed(1)} KB minified, ${(browserBundleBytes.gzipped / 1024).toFixed(2)} KB gzipped`,
);
