/** Latency buckets and the SVG from k6's JSON output lines (the format `k6 run --out json=` writes). */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { type LatencyBucket, latencyBuckets, latencySvg, niceStep, niceTicks } from "./chart.ts";

const dir = mkdtempSync(join(tmpdir(), "pemba-chart-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function point(second: number, value: number, group = "", metric = "http_req_duration"): string {
  const time = new Date(Date.UTC(2026, 10, 25, 3, 0, second, 250)).toISOString();
  return JSON.stringify({ metric, type: "Point", data: { time, value, tags: { group, status: "200" } } });
}

describe("latencyBuckets", () => {
  it("takes http_req_duration points of the test only, per second, with nearest-rank percentiles", async () => {
    const lines = [
      JSON.stringify({
        type: "Metric",
        data: { name: "http_req_duration", type: "trend" },
        metric: "http_req_duration",
      }),
      point(0, 500, "::setup"), // setup() requests are left out
      ...Array.from({ length: 100 }, (_, i) => point(1, i + 1)), // 1..100 ms in second 1
      point(1, 9999, "", "http_req_waiting"), // another metric
      point(2, 7),
      point(5, 3), // a gap of two seconds
    ];
    const file = join(dir, "a.json.gz");
    writeFileSync(file, gzipSync(`${lines.join("\n")}\n`));
    const buckets = await latencyBuckets([file]);
    expect(buckets).toEqual([
      { start: 0, requests: 100, p50: 50, p95: 95, p99: 99 },
      { start: 1, requests: 1, p50: 7, p95: 7, p99: 7 },
      { start: 4, requests: 1, p50: 3, p95: 3, p99: 3 },
    ]);
    const svg = latencySvg(buckets, "t <1>");
    expect(svg).toContain("t &lt;1&gt;");
    // each line starts anew after the gap: two moves per series, four series
    expect(svg.match(/[ "]M\d/g)).toHaveLength(8);
  });

  it("merges files and widens buckets to at most ~300 over a long run", async () => {
    const file1 = join(dir, "b1.json");
    const file2 = join(dir, "b2.json");
    writeFileSync(file1, `${point(0, 1)}\n`);
    writeFileSync(
      file2,
      `${[point(0, 3), ...Array.from({ length: 10 }, (_, i) => point(600 + i, 2))].join("\n")}\n`,
    );
    const buckets = await latencyBuckets([file1, file2]);
    // 610 seconds -> buckets of 3 s; rates are per second
    expect(buckets[0]).toEqual({ start: 0, requests: 2 / 3, p50: 1, p95: 3, p99: 3 });
    expect(buckets.at(-1)!.start).toBe(609);
    expect(buckets.reduce((n, b) => n + b.requests * 3, 0)).toBeCloseTo(12);
  });
});

/** 1, 2 or 5 times a power of ten. */
const isNice = (step: number) => {
  const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
  return [1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-9);
};

describe("niceTicks", () => {
  it("steps by 1, 2 or 5 times a power of ten, from 0 up to the maximum", () => {
    // a 101 s run cut in six was 0, 16.8, 33.7, ...
    expect(niceTicks(101, 6)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(niceTicks(31, 6)).toEqual([0, 10, 20, 30]);
    expect(niceTicks(30, 6)).toEqual([0, 5, 10, 15, 20, 25, 30]);
    expect(niceTicks(1, 6)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(0.3, 6)).toEqual([0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]);
    expect(niceTicks(3600, 6)).toEqual([0, 1000, 2000, 3000]);
    expect(niceTicks(0, 6)).toEqual([0]);
    for (let max = 0.07; max < 1e6; max *= 1.37) {
      const step = niceStep(max, 6);
      expect(isNice(step), `step ${step} for ${max}`).toBe(true);
      expect(max / step).toBeLessThanOrEqual(6 + 1e-9);
      const ticks = niceTicks(max, 6);
      expect(ticks.at(-1)!).toBeLessThanOrEqual(max);
      expect(ticks.at(-1)! + step).toBeGreaterThan(max);
    }
  });

  it("the chart's axis labels are nice ticks: time, milliseconds and requests/s", () => {
    const buckets: LatencyBucket[] = Array.from({ length: 101 }, (_, i) => ({
      start: i,
      requests: 480 + (i % 7),
      p50: 2,
      p95: 12,
      p99: i === 1 ? 287 : 20,
    }));
    const svg = latencySvg(buckets, "t");
    const labels = (pattern: RegExp) => [...svg.matchAll(pattern)].map((m) => m[1]);
    expect(labels(/y="372" text-anchor="middle">([^<]+)</g)).toEqual(["0", "20", "40", "60", "80", "100"]);
    expect(labels(/text-anchor="end">([^<]+)</g)).toEqual(["0", "50", "100", "150", "200", "250", "300"]);
    expect(labels(/fill="#777">([\d.]+)</g)).toEqual(["0", "100", "200", "300", "400", "500", "600"]);
  });
});

const CHROMIUM = "/usr/bin/chromium";

describe("latencySvg layout", () => {
  it.skipIf(!existsSync(CHROMIUM))(
    "title, legend and plot do not overlap, as Chromium lays them out, for a long title",
    async () => {
      const title = "flagd on node-postgres: 0.5 CPU (taskset -c 0 + cgroup quota 50 ms per 100 ms)";
      const svg = latencySvg([{ start: 0, requests: 10, p50: 1, p95: 2, p99: 3 }], title);
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      try {
        const page = await browser.newPage();
        await page.setContent(svg);
        // rendered boxes, relative to the SVG's top left corner
        const origin = (await page.locator("svg").boundingBox())!;
        const box = async (id: string) => {
          const b = (await page.locator(`#${id}`).boundingBox())!;
          const [left, top] = [b.x - origin.x, b.y - origin.y];
          return { left, top, right: left + b.width, bottom: top + b.height };
        };
        const [titleBox, legend, plot] = [await box("title"), await box("legend"), await box("plot")];
        type Box = typeof titleBox;
        const apart = (a: Box, b: Box) =>
          a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
        expect(apart(titleBox, legend), JSON.stringify({ titleBox, legend })).toBe(true);
        expect(apart(legend, plot), JSON.stringify({ legend, plot })).toBe(true);
        expect(titleBox.bottom).toBeLessThanOrEqual(legend.top);
        for (const b of [titleBox, legend]) expect(b.right).toBeLessThanOrEqual(920);
      } finally {
        await browser.close();
      }
    },
  );
});
