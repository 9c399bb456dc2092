/**
 * Latency over time from k6's JSON output (`k6 run --out json=<file>[.gz]`): the http_req_duration samples of the
 * test (setup and teardown left out) in time buckets, drawn as a self-contained SVG (p50, p95, p99 and requests/s).
 * No network, no library: the SVG is written by hand.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { createGunzip } from "node:zlib";

export interface LatencyBucket {
  /** Seconds since the first sample of the chart. */
  start: number;
  requests: number;
  p50: number;
  p95: number;
  p99: number;
}

interface Sample {
  second: number;
  value: number;
}

/** The test's http_req_duration samples of one k6 JSON output file, by whole epoch second. */
async function readSamples(file: string): Promise<Sample[]> {
  const raw = createReadStream(file);
  const input = file.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
  const samples: Sample[] = [];
  for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    // cheap filter before parsing: most lines are other metrics
    if (!line.includes('"metric":"http_req_duration"') || !line.includes('"type":"Point"')) continue;
    const point = JSON.parse(line) as {
      data: { time: string; value: number; tags?: Record<string, string> };
    };
    const group = point.data.tags?.group ?? "";
    if (group === "::setup" || group === "::teardown") continue;
    samples.push({ second: Math.floor(Date.parse(point.data.time) / 1000), value: point.data.value });
  }
  return samples;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Buckets of `bucketSeconds` (chosen so there are at most ~300 when not given) over all files, in time order. */
export async function latencyBuckets(files: string[], bucketSeconds?: number): Promise<LatencyBucket[]> {
  const all: Sample[] = [];
  for (const file of files) for (const s of await readSamples(file)) all.push(s);
  if (all.length === 0) return [];
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const s of all) {
    first = Math.min(first, s.second);
    last = Math.max(last, s.second);
  }
  const width = bucketSeconds ?? Math.max(1, Math.ceil((last - first + 1) / 300));
  const byBucket = new Map<number, number[]>();
  for (const s of all) {
    const index = Math.floor((s.second - first) / width);
    let values = byBucket.get(index);
    if (values === undefined) {
      values = [];
      byBucket.set(index, values);
    }
    values.push(s.value);
  }
  return [...byBucket.keys()]
    .sort((a, b) => a - b)
    .map((index) => {
      const sorted = Float64Array.from(byBucket.get(index)!).sort();
      return {
        start: index * width,
        requests: sorted.length / width,
        p50: percentile(sorted, 50),
        p95: percentile(sorted, 95),
        p99: percentile(sorted, 99),
      };
    });
}

const W = 920;
const H = 400;
/** The title on the first row, the legend on its own row below it, then the plot. */
const TITLE_BASELINE = 22;
const LEGEND_BASELINE = 44;
const PAD = { left: 64, right: 70, top: 60, bottom: 44 };

/**
 * The step of "nice" ticks (1, 2 or 5 times a power of ten) from 0 to `max`: the smallest that needs at most
 * `count` steps.
 */
export function niceStep(max: number, count: number): number {
  if (!(max > 0)) return 1;
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5]) if (m * power >= raw * (1 - 1e-12)) return m * power;
  return 10 * power;
}

/** Decimals that show every multiple of `step` exactly: 0 for 1, 20 or 500; 1 for 0.5; 2 for 0.02. */
const decimalsOf = (step: number) => Math.max(0, -Math.floor(Math.log10(step) + 1e-9));

/** The ticks 0, step, 2 step, ... up to `max` (inclusive) of niceStep(max, count). */
export function niceTicks(max: number, count: number): number[] {
  const step = niceStep(max, count);
  const decimals = decimalsOf(step);
  const ticks: number[] = [];
  for (let i = 0; i * step <= max * (1 + 1e-12); i++) ticks.push(Number((i * step).toFixed(decimals)));
  return ticks;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** The chart as a standalone SVG document. Lines break where a bucket has no samples (between k6 runs). */
export function latencySvg(buckets: LatencyBucket[], title: string): string {
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const span = Math.max(1, buckets.length === 0 ? 1 : buckets.at(-1)!.start + 1);
  // both y axes share the grid: `divisions` nice steps each
  const topMs = Math.max(0, ...buckets.map((b) => b.p99));
  const msStep = niceStep(topMs, 6);
  const divisions = Math.max(1, Math.ceil(topMs / msStep - 1e-9));
  const rateStep = niceStep(Math.max(0, ...buckets.map((b) => b.requests)), divisions);
  const maxMs = msStep * divisions;
  const maxRate = rateStep * divisions;
  const x = (t: number) => PAD.left + (t / span) * plotW;
  const yMs = (v: number) => PAD.top + plotH - (Math.min(v, maxMs) / maxMs) * plotH;
  const yRate = (v: number) => PAD.top + plotH - (v / maxRate) * plotH;
  const step = buckets.length > 1 ? buckets[1]!.start - buckets[0]!.start : 1;
  const path = (value: (b: LatencyBucket) => number, y: (v: number) => number) => {
    let d = "";
    let previous = Number.NaN;
    for (const b of buckets) {
      const move = d === "" || b.start - previous > step;
      d += `${move ? "M" : "L"}${x(b.start).toFixed(1)},${y(value(b)).toFixed(1)} `;
      previous = b.start;
    }
    return d.trim();
  };
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${esc(title)}: latency over time</title>`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text id="title" x="${PAD.left}" y="${TITLE_BASELINE}" font-size="14" font-weight="bold">${esc(title)}</text>`,
  ];
  for (let i = 0; i <= divisions; i++) {
    const y = PAD.top + plotH - (plotH * i) / divisions;
    parts.push(
      `<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y}" y2="${y}" stroke="#ddd"/>`,
      `<text x="${PAD.left - 6}" y="${y + 4}" text-anchor="end">${(msStep * i).toFixed(decimalsOf(msStep))}</text>`,
      `<text x="${W - PAD.right + 6}" y="${y + 4}" fill="#777">${(rateStep * i).toFixed(decimalsOf(rateStep))}</text>`,
    );
  }
  const timeStep = niceStep(span, 8);
  for (const t of niceTicks(span, 8)) {
    parts.push(
      `<text x="${x(t)}" y="${H - PAD.bottom + 16}" text-anchor="middle">${t.toFixed(decimalsOf(timeStep))}</text>`,
    );
  }
  parts.push(
    `<text x="${PAD.left + plotW / 2}" y="${H - 8}" text-anchor="middle">seconds since the first request</text>`,
    `<text transform="translate(16,${PAD.top + plotH / 2}) rotate(-90)" text-anchor="middle">http_req_duration (ms)</text>`,
    `<text transform="translate(${W - 14},${PAD.top + plotH / 2}) rotate(90)" text-anchor="middle" fill="#777">requests/s</text>`,
    `<rect id="plot" x="${PAD.left}" y="${PAD.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
  );
  const lines: [string, string, (b: LatencyBucket) => number, (v: number) => number][] = [
    ["p50", "#1f77b4", (b) => b.p50, yMs],
    ["p95", "#ff7f0e", (b) => b.p95, yMs],
    ["p99", "#d62728", (b) => b.p99, yMs],
    ["requests/s (right axis)", "#aaa", (b) => b.requests, yRate],
  ];
  if (buckets.length > 0)
    // requests/s first, under the latency lines
    for (const [, color, value, y] of [lines[3]!, ...lines.slice(0, 3)])
      parts.push(`<path d="${path(value, y)}" fill="none" stroke="${color}" stroke-width="1.5"/>`);
  // the legend's own row: each entry a 22 px line and its name (about 7 px a character at 12 px)
  parts.push(`<g id="legend">`);
  let lx = PAD.left;
  for (const [name, color] of lines) {
    parts.push(
      `<line x1="${lx}" x2="${lx + 22}" y1="${LEGEND_BASELINE - 4}" y2="${LEGEND_BASELINE - 4}" stroke="${color}" stroke-width="3"/>`,
      `<text x="${lx + 27}" y="${LEGEND_BASELINE}">${name}</text>`,
    );
    lx += 27 + name.length * 7 + 24;
  }
  parts.push("</g>");
  if (buckets.length === 0) {
    parts.push(`<text x="${PAD.left + 20}" y="${PAD.top + 30}">no samples</text>`);
  }
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}

/** One line of a memory chart: MB at seconds since the start. */
export interface MemorySeries {
  name: string;
  color: string;
  points: readonly { seconds: number; megabytes: number }[];
}

/**
 * Memory over time as a standalone SVG document: one line per series (RSS, and for a Node server its heap and the
 * replica's working set), MB on the y axis, minutes on the x axis.
 */
export function memorySvg(series: readonly MemorySeries[], title: string): string {
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const all = series.flatMap((s) => s.points);
  const spanMinutes = Math.max(1 / 60, ...all.map((p) => p.seconds / 60));
  const mbStep = niceStep(Math.max(1, ...all.map((p) => p.megabytes)), 6);
  const divisions = Math.max(1, Math.ceil(Math.max(1, ...all.map((p) => p.megabytes)) / mbStep - 1e-9));
  const maxMb = mbStep * divisions;
  const x = (minutes: number) => PAD.left + (minutes / spanMinutes) * plotW;
  const y = (mb: number) => PAD.top + plotH - (mb / maxMb) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${esc(title)}: memory over time</title>`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text id="title" x="${PAD.left}" y="${TITLE_BASELINE}" font-size="14" font-weight="bold">${esc(title)}</text>`,
  ];
  for (let i = 0; i <= divisions; i++) {
    const yy = PAD.top + plotH - (plotH * i) / divisions;
    parts.push(
      `<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${yy}" y2="${yy}" stroke="#ddd"/>`,
      `<text x="${PAD.left - 6}" y="${yy + 4}" text-anchor="end">${(mbStep * i).toFixed(decimalsOf(mbStep))}</text>`,
    );
  }
  const timeStep = niceStep(spanMinutes, 8);
  for (const t of niceTicks(spanMinutes, 8)) {
    parts.push(
      `<text x="${x(t)}" y="${H - PAD.bottom + 16}" text-anchor="middle">${t.toFixed(decimalsOf(timeStep))}</text>`,
    );
  }
  parts.push(
    `<text x="${PAD.left + plotW / 2}" y="${H - 8}" text-anchor="middle">minutes since the start</text>`,
    `<text transform="translate(16,${PAD.top + plotH / 2}) rotate(-90)" text-anchor="middle">MB</text>`,
    `<rect id="plot" x="${PAD.left}" y="${PAD.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
  );
  for (const s of series) {
    if (s.points.length === 0) continue;
    const d = s.points
      .map((p, i) => `${i === 0 ? "M" : "L"}${x(p.seconds / 60).toFixed(1)},${y(p.megabytes).toFixed(1)}`)
      .join(" ");
    parts.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.5"/>`);
  }
  parts.push(`<g id="legend">`);
  let lx = PAD.left;
  for (const s of series) {
    parts.push(
      `<line x1="${lx}" x2="${lx + 22}" y1="${LEGEND_BASELINE - 4}" y2="${LEGEND_BASELINE - 4}" stroke="${s.color}" stroke-width="3"/>`,
      `<text x="${lx + 27}" y="${LEGEND_BASELINE}">${esc(s.name)}</text>`,
    );
    lx += 27 + s.name.length * 7 + 24;
  }
  parts.push("</g>");
  if (all.length === 0) parts.push(`<text x="${PAD.left + 20}" y="${PAD.top + 30}">no samples</text>`);
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
