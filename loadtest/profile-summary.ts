/**
 * Top self-time functions of a V8 .cpuprofile (from `node --cpu-prof`), for reading where a server spends CPU.
 *   node --experimental-strip-types loadtest/profile-summary.ts <file.cpuprofile> [top=25] [skipSeconds=0]
 * skipSeconds ignores the first seconds of the profile (e.g. the seeding before a check load).
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg, skipArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: profile-summary.ts <file.cpuprofile> [top]");
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfMicros = new Map<number, number>();
const skipMicros = Number(skipArg ?? 0) * 1e6;
let elapsed = 0;
profile.samples.forEach((id, i) => {
  elapsed += profile.timeDeltas[i] ?? 0;
  if (elapsed < skipMicros) return;
  selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});

const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;
for (const [id, micros] of selfMicros) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const short = url.replace(/^.*\/(node_modules|packages)\//, "$1/");
  const key = `${functionName || "(anonymous)"} ${short}:${lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + micros);
  const fileKey =
    short === "" ? functionName : short.replace(/^node_modules\/\.pnpm\/[^/]+\/node_modules\//, "");
  byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + micros);
  total += micros;
}
const top = Number(topArg ?? 25);
const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${title} (total ${(total / 1e6).toFixed(2)} s sampled)`);
  for (const [key, micros] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * micros) / total).toFixed(1).padStart(5)}%  ${key}`);
  }
};
print("self time by function", byFunction);
print("self time by file", byFile);
