/** The browser bundle a user's bundler would make of the package: src/index.ts minified, then gzipped. */
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { type BuildOptions, build } from "esbuild";

export const SDK_DIR = resolve(import.meta.dirname, "..");

/** esbuild options shared by the package build and the size measurement. */
export const BUNDLE_OPTIONS: BuildOptions = {
  entryPoints: [join(SDK_DIR, "src/index.ts")],
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2022",
  legalComments: "none",
  logLevel: "warning",
};

export async function measureBrowserBundle(): Promise<{ minified: number; gzipped: number }> {
  const out = await build({ ...BUNDLE_OPTIONS, minify: true, write: false, outfile: "index.min.js" });
  const code = out.outputFiles![0].contents;
  return { minified: code.length, gzipped: gzipSync(code, { level: 9 }).length };
}
