#!/usr/bin/env -S node --experimental-strip-types --no-warnings
/**
 * The `pemba` command line. The Node version is checked before anything else is loaded: an older Node would fail
 * later with an obscure error (chevrotain calls Object.groupBy, which Node 20 lacks).
 */
import { nodeVersionProblem } from "./node-version.ts";

const problem = nodeVersionProblem(process.versions.node);
if (problem !== undefined) {
  process.stderr.write(`pemba: ${problem}\n`);
  process.exitCode = 1;
} else {
  await import("./run-command.ts");
}
