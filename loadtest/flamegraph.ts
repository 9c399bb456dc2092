/**
 * Writes a flame graph (self-contained SVG) of a V8 CPU profile from `node --cpu-prof`:
 *   node --experimental-strip-types loadtest/flamegraph.ts <file.cpuprofile> [out.svg]
 */
import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { type CpuProfile, flameGraphSvg } from "./lib/flamegraph.ts";

const [input, output] = process.argv.slice(2);
if (input === undefined) {
  console.error("usage: flamegraph.ts <file.cpuprofile> [out.svg]");
  process.exit(2);
}
const out = output ?? `${input.replace(/\.cpuprofile$/, "")}-flame.svg`;
const profile = JSON.parse(readFileSync(input, "utf8")) as CpuProfile;
writeFileSync(out, flameGraphSvg(profile, basename(input)));
console.log(out);
