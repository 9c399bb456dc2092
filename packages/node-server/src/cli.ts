#!/usr/bin/env -S node --experimental-strip-types --no-warnings
/**
 * The `pemba` command line. The Node version is checked before anything else is loaded: an older Node would fail
 * later with an obscure error (chevrotain calls Object.groupBy, which Node 20 lacks).
 */
import module from "node:module";
import { boundedHeapFlags } from "./heap-bound.ts";
import { nodeVersionProblem } from "./node-version.ts";

const problem = nodeVersionProblem(process.versions.node);
if (problem !== undefined) {
  process.stderr.write(`pemba: ${problem}\n`);
  process.exitCode = 1;
} else {
  // import and export run with V8's heap bounded (heap-bound.ts): the process replaces itself (same pid, same
  // descriptors) with one started under those flags; a Node without process.execve runs the command unbounded
  const heap = boundedHeapFlags(process.argv.slice(2), process.execArgv, process.env.NODE_OPTIONS);
  if (heap !== undefined && typeof process.execve === "function")
    process.execve(process.execPath, [
      process.execPath,
      ...process.execArgv,
      ...heap,
      process.argv[1]!,
      ...process.argv.slice(2),
    ]);
  // V8's code for the modules loaded next is cached on disk (NODE_COMPILE_CACHE, default <tmpdir>/node-compile-cache;
  // NODE_DISABLE_COMPILE_CACHE=1 turns it off): a short command starts ~50 ms sooner.
  module.enableCompileCache?.();
  await import("./run-command.ts");
}
