/**
 * Bundles the `pemba` CLI (src/cli.ts and everything it imports from @pemba/core) into one JavaScript file,
 * dist/pemba.mjs (and core's schema parse thread into dist/parse-thread.mjs, the worker thread it starts), so the
 * server starts without Node's TypeScript stripping (which keeps ~60 MB of WebAssembly
 * memory resident for the life of the process) and parses one file instead of ~150.
 *
 *   node packages/node-server/scripts/build.mjs [--quiet] [--outdir <dir>]
 *
 * Native or worker-thread packages stay external (better-sqlite3, pg, @libsql/client, pino, prom-client,
 * @hono/node-server: dependencies of this package, so they resolve from dist/; the installable package
 * packages/cli lists the same ones). The SQL migrations are copied beside the bundle (dist/drizzle), so the output
 * folder is complete on its own: `--outdir` builds packages/cli/dist, what its tarball ships. Skips the build when
 * dist/pemba.mjs is newer than every source file of node-server and core.
 */
import { cpSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(here, "..");
const coreDir = path.resolve(pkgDir, "../core");
const outdirArg = process.argv.indexOf("--outdir");
const outdir = outdirArg > 0 ? path.resolve(process.argv[outdirArg + 1]) : path.join(pkgDir, "dist");
const outfile = path.join(outdir, "pemba.mjs");
const quiet = process.argv.includes("--quiet");

// The packages the bundle leaves external are the installable package's dependencies (packages/cli/package.json);
// node-server depends on the same versions (packages/cli/test/package.test.ts holds the two lists equal).
const EXTERNAL = Object.keys(
  JSON.parse(readFileSync(path.resolve(pkgDir, "../cli/package.json"), "utf8")).dependencies,
);

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name === "dist" || entry.name.startsWith(".")) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (/\.(ts|mjs|json|sql)$/.test(entry.name)) newest = Math.max(newest, statSync(full).mtimeMs);
  }
  return newest;
}

function builtAt() {
  try {
    return statSync(outfile).mtimeMs;
  } catch {
    return 0;
  }
}

const sources = Math.max(
  newestSource(path.join(pkgDir, "src")),
  newestSource(path.join(coreDir, "src")),
  newestSource(path.join(coreDir, "drizzle")),
  newestSource(path.resolve(pkgDir, "../console/src")),
  newestSource(path.resolve(pkgDir, "../console/generated")),
  statSync(path.join(pkgDir, "package.json")).mtimeMs,
  statSync(path.resolve(pkgDir, "../cli/package.json")).mtimeMs,
  statSync(fileURLToPath(import.meta.url)).mtimeMs,
);
if (builtAt() > sources) {
  if (!quiet) console.log(`pemba build: ${path.relative(process.cwd(), outfile)} is up to date`);
  process.exit(0);
}

const started = performance.now();
// The migrations folder is found relative to the module's own URL; in the bundle that URL is dist/pemba.mjs, and
// the folder is the copy in dist/drizzle.
const migrationsFromBundle = {
  name: "migrations-location",
  setup(b) {
    b.onLoad({ filter: /store[\\/]sql[\\/]migrations-location\.ts$/ }, () => ({
      loader: "ts",
      contents: [
        'export const SQLITE_MIGRATIONS_URL = new URL("./drizzle/sqlite", import.meta.url);',
        'export const PG_MIGRATIONS_URL = new URL("./drizzle/pg", import.meta.url);',
      ].join("\n"),
    }));
  },
};
// The schema parse thread is found relative to the module's own URL too: in dist/, it is the bundle's second entry.
const parseThreadFromBundle = {
  name: "parse-thread-location",
  setup(b) {
    b.onLoad({ filter: /parse-worker[\\/]parse-thread-location\.ts$/ }, () => ({
      loader: "ts",
      contents: 'export const PARSE_THREAD_URL = new URL("./parse-thread.mjs", import.meta.url);',
    }));
  },
};
// cli.ts is a small entry (the Node version check) that turns on Node's compile cache and then imports the rest,
// pemba-main.mjs: V8's code for the 4 MB bundle is then read from the cache instead of compiled at every start.
const mainFromBundle = {
  name: "main-entry",
  setup(b) {
    b.onResolve({ filter: /^\.\/run-command\.ts$/ }, (args) =>
      args.importer.endsWith(`${path.sep}cli.ts`) ? { path: "./pemba-main.mjs", external: true } : undefined,
    );
  },
};
rmSync(path.join(outdir, "drizzle"), { recursive: true, force: true });
cpSync(path.join(coreDir, "drizzle"), path.join(outdir, "drizzle"), { recursive: true });
await build({
  entryPoints: {
    pemba: path.join(pkgDir, "src/cli.ts"),
    "pemba-main": path.join(pkgDir, "src/run-command.ts"),
    "parse-thread": path.join(coreDir, "src/service/parse-worker/parse-thread.ts"),
  },
  outdir,
  outExtension: { ".js": ".mjs" },
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  external: EXTERNAL,
  plugins: [migrationsFromBundle, parseThreadFromBundle, mainFromBundle],
  // CommonJS dependencies bundled into ESM call require() for Node built-ins.
  banner: {
    js: "import { createRequire as __pembaRequire } from 'node:module'; const require = __pembaRequire(import.meta.url);",
  },
  legalComments: "none",
  logLevel: "warning",
});
// The bundle needs no TypeScript stripping: its first line runs plain node (an installed `pemba` runs this file).
const entry = readFileSync(outfile, "utf8");
writeFileSync(outfile, entry.replace(/^#!.*\n/, "#!/usr/bin/env node\n"));
if (!quiet) {
  const kb = Math.round(statSync(outfile).size / 1024);
  console.log(
    `pemba build: ${path.relative(process.cwd(), outfile)} (${kb} KB) in ${Math.round(performance.now() - started)} ms`,
  );
}
