/**
 * Who spends a server's user-space CPU, from a Linux `perf record -g` of the process (node run with
 * --perf-basic-prof, so that JavaScript frames have names): each sample is charged to the first JavaScript frame
 * from its leaf (the native code and V8 builtins it called are its cost), by the module it belongs to; a sample
 * with no JavaScript frame is charged to its native owner (nghttp2, node's HTTP/2 binding, llhttp, libuv, V8's GC or
 * compiler). perf_event_paranoid 2 allows this for one's own processes in user space (`-e cpu-clock:u`); kernel
 * time is not in it (read it from /proc).
 */
import { spawn, spawnSync } from "node:child_process";

/** The owner of one sample's stack (frames leaf first, as `perf script` prints them). */
export function ownerOf(frames: readonly string[]): string {
  for (const f of frames) {
    if (!f.startsWith("JS:")) continue;
    if (f.includes("node:internal/http2")) return "node:http2 JS (Http2Stream, headers, session)";
    if (/node:_http|node:internal\/http\b|node:http\b/.test(f))
      return "node:http JS (IncomingMessage, ServerResponse)";
    if (f.includes("node:internal/streams")) return "node streams JS (Duplex, Readable, Writable)";
    if (f.includes("node:events")) return "node events JS";
    if (f.includes("grpc-bare-server")) return "the bare server's JS";
    if (/packages\/|pemba|node_modules/.test(f)) return "Pemba JS (with its libraries)";
    return "other node JS (ticks, timers, net, async hooks)";
  }
  const top = frames.slice(0, 8).join(" ");
  if (/nghttp2_/.test(frames[0] ?? "")) return "nghttp2 (C)";
  if (/node::http2/.test(top)) return "node's HTTP/2 binding (C++) and nghttp2";
  if (/llhttp/.test(top)) return "llhttp (C)";
  if (/Scaveng|Heap::|MarkCompact|Sweep|Evacuat|ConcurrentMarking|MarkingVisitor/.test(top)) return "V8 GC";
  if (/v8::internal::compiler|turboshaft|Maglev|maglev/.test(top)) return "V8 JIT compiler";
  if (/uv_|uv__|epoll/.test(top)) return "libuv";
  return "other native (malloc, V8 runtime)";
}

/** Samples per owner in a perf.data file. */
export function perfOwners(dataFile: string): { samples: number; owners: Map<string, number> } {
  const run = spawnSync("perf", ["script", "-i", dataFile], { encoding: "utf8", maxBuffer: 1 << 30 });
  if (run.status !== 0) throw new Error(`perf script: ${run.stderr}`);
  const owners = new Map<string, number>();
  let samples = 0;
  for (const block of run.stdout.split("\n\n")) {
    const lines = block.trim().split("\n");
    if (lines.length < 2) continue;
    // "  addr symbol+off (dso)": the symbol and offset
    const frames = lines.slice(1).map((l) => l.trim().replace(/^[0-9a-f]+ /, ""));
    const owner = ownerOf(frames);
    owners.set(owner, (owners.get(owner) ?? 0) + 1);
    samples++;
  }
  return { samples, owners };
}

/** `perf record` of one process until the returned function stops it (SIGINT: perf writes its file). */
export function perfRecord(pid: number, dataFile: string): () => Promise<void> {
  const perf = spawn(
    "perf",
    ["record", "-e", "cpu-clock:u", "-F", "999", "-g", "-p", String(pid), "-o", dataFile],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  perf.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  // perf may have ended already (it could not start or write): the stop then reports why instead of waiting
  const exited = new Promise<number | null>((resolve) => perf.once("close", resolve));
  return async () => {
    if (perf.exitCode === null) perf.kill("SIGINT");
    const code = await exited;
    if (code !== 0 && code !== null) throw new Error(`perf record exited with ${code}: ${stderr.trim()}`);
  };
}
