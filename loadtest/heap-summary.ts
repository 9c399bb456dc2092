/**
 * Reads V8 sampling heap profiles (.heapprofile, as lib/heap-sample.mjs writes them for ab-grpc.ts
 * --heap-sample-dir) and prints the bytes allocated, in all and per request when the count is given: by allocating
 * function (the leaf frame), and by the innermost frame of the bundled server (pemba.mjs) on the stack, so that
 * allocations inside node's own modules are charged to the server code that called them (or to node when no server
 * frame is on the stack: node:http2's session and stream work).
 *   node --experimental-strip-types loadtest/heap-summary.ts <file.heapprofile>[=<requests>] ... [--top 25]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  callFrame: CallFrame;
  selfSize: number;
  children: ProfileNode[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: "string", default: "25" } },
});
const TOP = Number(values.top);

const where = (f: CallFrame) =>
  `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\//, "")}:${f.lineNumber + 1}`;
const isServer = (f: CallFrame) => /pemba[-\w]*\.mjs$|grpc-bare-server\.ts$|bare-server\.ts$/.test(f.url);

for (const arg of positionals) {
  const [file, count] = arg.split("=") as [string, string | undefined];
  const requests = count === undefined ? undefined : Number(count);
  const profile = JSON.parse(readFileSync(file, "utf8")) as { head: ProfileNode };
  const byLeaf = new Map<string, number>();
  const byServerFrame = new Map<string, number>();
  let total = 0;
  const walk = (node: ProfileNode, serverFrame: string | undefined) => {
    const frame = isServer(node.callFrame) ? where(node.callFrame) : serverFrame;
    if (node.selfSize > 0) {
      total += node.selfSize;
      const leaf = where(node.callFrame);
      byLeaf.set(leaf, (byLeaf.get(leaf) ?? 0) + node.selfSize);
      const owner = frame ?? `(node, no server frame) ${leaf}`;
      byServerFrame.set(owner, (byServerFrame.get(owner) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, frame);
  };
  walk(profile.head, undefined);
  const show = (bytes: number) =>
    requests === undefined
      ? `${(bytes / 1024).toFixed(0).padStart(9)} KiB`
      : `${(bytes / requests).toFixed(0).padStart(7)} B/req`;
  console.log(
    `\n${file}: ${(total / 1048576).toFixed(1)} MiB allocated${requests === undefined ? "" : `, ${(total / requests).toFixed(0)} bytes per request over ${requests}`}`,
  );
  for (const [title, map] of [
    ["by allocating function", byLeaf],
    ["by the innermost server frame", byServerFrame],
  ] as const) {
    console.log(`  ${title}:`);
    for (const [name, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, TOP))
      console.log(`  ${show(bytes)} ${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${name}`);
  }
}
