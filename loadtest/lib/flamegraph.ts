/**
 * A flame graph of a V8 CPU profile (`node --cpu-prof`'s .cpuprofile) as a self-contained SVG: one box per
 * call-stack frame, its width the frame's share of the sampled time (itself and its callees), callers below
 * callees (the root at the bottom). Hovering a box shows the function, its file and line, and its time. Idle time
 * (V8's "(idle)" frame: the server waiting for requests) is left out, and said in the title.
 * CLI: loadtest/flamegraph.ts.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

interface Frame {
  name: string;
  where: string;
  micros: number;
  children: Frame[];
}

const WIDTH = 1200;
const ROW = 17;
const MIN_WIDTH_PX = 0.5;

/** The profile's call tree with each frame's total time (self + callees) in microseconds. */
function callTree(profile: CpuProfile): Frame {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + Math.max(0, profile.timeDeltas[i] ?? 0));
  });
  const build = (id: number): Frame => {
    const node = byId.get(id)!;
    const children = (node.children ?? [])
      .map(build)
      .filter((c) => c.name !== "(idle)")
      .sort((a, b) => a.name.localeCompare(b.name));
    const { functionName, url, lineNumber } = node.callFrame;
    return {
      name: functionName || "(anonymous)",
      where: url === "" ? "" : `${url.replace(/^.*\/(node_modules|packages)\//, "$1/")}:${lineNumber + 1}`,
      micros: (self.get(id) ?? 0) + children.reduce((sum, c) => sum + c.micros, 0),
      children,
    };
  };
  return build(profile.nodes[0]!.id);
}

function depthOf(frame: Frame): number {
  return 1 + Math.max(0, ...frame.children.map(depthOf));
}

const esc = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** A warm color from the frame's file, so frames of one file share a hue. */
function color(where: string): string {
  let hash = 0;
  for (let i = 0; i < where.length; i++) hash = (hash * 31 + where.charCodeAt(i)) >>> 0;
  return `hsl(${(hash % 50) + 5}, ${70 + (hash % 20)}%, ${55 + ((hash >> 8) % 15)}%)`;
}

export function flameGraphSvg(profile: CpuProfile, title: string): string {
  const root = callTree(profile);
  const sampled = profile.timeDeltas.reduce((sum, d) => sum + Math.max(0, d), 0);
  const total = Math.max(1, root.micros);
  const depth = Math.min(depthOf(root), 200);
  const height = (depth + 2) * ROW + 30;
  const boxes: string[] = [];
  const draw = (frame: Frame, x: number, level: number) => {
    const w = (frame.micros / total) * WIDTH;
    if (w < MIN_WIDTH_PX || level >= depth) return;
    const y = height - (level + 1) * ROW - 10;
    const percent = ((100 * frame.micros) / total).toFixed(2);
    const label = `${frame.name} ${frame.where} (${(frame.micros / 1000).toFixed(1)} ms, ${percent}%)`;
    const chars = Math.floor((w - 6) / 7);
    const text =
      chars >= 3 ? (frame.name.length > chars ? `${frame.name.slice(0, chars - 2)}..` : frame.name) : "";
    boxes.push(
      `<g><title>${esc(label)}</title><rect x="${x.toFixed(2)}" y="${y}" width="${w.toFixed(2)}" height="${ROW - 1}" fill="${color(frame.where || frame.name)}" rx="2"/>` +
        (text ? `<text x="${(x + 3).toFixed(2)}" y="${y + 12}">${esc(text)}</text>` : "") +
        "</g>",
    );
    let childX = x;
    for (const child of frame.children) {
      draw(child, childX, level + 1);
      childX += (child.micros / total) * WIDTH;
    }
  };
  draw(root, 0, 0);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="monospace" font-size="11">`,
    `<title>${esc(title)}: flame graph</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#fdfdf6"/>`,
    `<text x="6" y="18" font-size="14" font-family="sans-serif" font-weight="bold">${esc(title)}: ${(total / 1e6).toFixed(2)} s busy of ${(sampled / 1e6).toFixed(2)} s sampled, idle left out (hover a frame for its time)</text>`,
    ...boxes,
    "</svg>",
    "",
  ].join("\n");
}
