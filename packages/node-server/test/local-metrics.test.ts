import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LocalCounter, LocalHistogram } from "../src/local-metrics.ts";

const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVATIONS: [string, string, number][] = [
  ["/a", "200", 0.0005],
  ["/a", "200", 0.001],
  ["/a", "200", 0.0101],
  ["/b", "404", 2.5],
  ["/a", "500", 0.25],
  ["/a", "200", 1],
];

function promClient() {
  const registry = new Registry();
  const counter = new Counter({
    name: "t_total",
    help: "a counter",
    labelNames: ["route", "status"],
    registers: [registry],
  });
  const histogram = new Histogram({
    name: "t_seconds",
    help: "a histogram",
    labelNames: ["route", "status"],
    buckets: BUCKETS,
    registers: [registry],
  });
  for (const [route, status, value] of OBSERVATIONS) {
    counter.labels({ route, status }).inc();
    histogram.labels({ route, status }).observe(value);
  }
  return registry;
}

function local() {
  const registry = new Registry();
  const counter = new LocalCounter("t_total", "a counter", registry);
  const histogram = new LocalHistogram("t_seconds", "a histogram", BUCKETS, registry);
  for (const [route, status, value] of OBSERVATIONS) {
    counter.labels({ route, status }).value++;
    histogram.labels({ route, status }).observe(value);
  }
  return { registry, counter, histogram };
}

describe("local counters and histograms", () => {
  it("print exactly what prom-client prints for the same observations", async () => {
    const expected = await promClient().metrics();
    expect(expected).toContain('t_seconds_bucket{le="0.01",route="/a",status="200"} 2');
    expect(await local().registry.metrics()).toBe(expected);
  });

  it("give the same JSON as prom-client", async () => {
    expect(await local().registry.getMetricsAsJSON()).toEqual(await promClient().getMetricsAsJSON());
  });

  it("keep counting into the same series after a reset", async () => {
    const { registry, counter, histogram } = local();
    const series = counter.labels({ route: "/a", status: "200" });
    const time = histogram.labels({ route: "/a", status: "200" });
    registry.resetMetrics();
    series.value++;
    time.observe(0.05);
    const text = await registry.metrics();
    expect(text).toContain('t_total{route="/a",status="200"} 1\n');
    expect(text).toContain('t_total{route="/b",status="404"} 0\n');
    expect(text).toContain('t_seconds_bucket{le="0.01",route="/a",status="200"} 0\n');
    expect(text).toContain('t_seconds_bucket{le="0.1",route="/a",status="200"} 1\n');
    expect(text).toContain('t_seconds_sum{route="/a",status="200"} 0.05\n');
    expect(text).toContain('t_seconds_count{route="/a",status="200"} 1\n');
  });
});
