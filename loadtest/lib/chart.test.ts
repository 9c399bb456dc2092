/** Latency buckets and the SVG from k6's JSON output lines (the format `k6 run --out json=` writes). */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { latencyBuckets, latencySvg } from "./chart.ts";

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
