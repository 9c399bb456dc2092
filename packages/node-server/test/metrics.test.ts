import type { RequestInfo } from "@pemba/core";
import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createServerMetrics } from "../src/metrics.ts";

const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The same series as prom-client's own Counter and Histogram would give them, observed per request. */
function reference() {
  const registry = new Registry();
  const requests = new Counter({
    name: "pemba_http_requests_total",
    help: "HTTP requests answered, by route and status",
    labelNames: ["route", "status"],
    registers: [registry],
  });
  const latency = new Histogram({
    name: "pemba_http_request_duration_seconds",
    help: "HTTP request latency in seconds, by route and status",
    labelNames: ["route", "status"],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const decisions = new Counter({
    name: "pemba_check_decisions_total",
    help: "Permission check decisions, by decision (allowed/denied)",
    labelNames: ["decision"],
    registers: [registry],
  });
  const names: Record<string, string> = { CHECK_RESULT_ALLOWED: "allowed", CHECK_RESULT_DENIED: "denied" };
  return {
    registry,
    observe({ route, status, seconds, decision }: RequestInfo) {
      requests.labels(route, String(status)).inc();
      latency.labels(route, String(status)).observe(seconds);
      if (decision !== undefined) decisions.labels(names[decision] ?? decision.toLowerCase()).inc();
    },
  };
}

/** The text of the metric families named, in the registry's exposition format. */
async function families(registry: Registry, names: string[]): Promise<string[]> {
  const text = await registry.metrics();
  return names.map((name) =>
    text
      .split("\n\n")
      .filter((block) => block.includes(`# TYPE ${name} `))
      .map((block) => block.trim())
      .join("\n\n"),
  );
}

const NAMES = [
  "pemba_http_requests_total",
  "pemba_http_request_duration_seconds",
  "pemba_check_decisions_total",
];

describe("the per-request metrics", () => {
  it("expose what prom-client's Counter and Histogram expose for the same requests, across scrapes", async () => {
    const metrics = createServerMetrics();
    const ref = reference();
    const check = "/v1/tenants/:tenant_id/permissions/check";
    const batches: RequestInfo[][] = [
      [
        { method: "POST", route: check, status: 200, seconds: 0.0003, decision: "CHECK_RESULT_ALLOWED" },
        { method: "POST", route: check, status: 200, seconds: 0.0005, decision: "CHECK_RESULT_DENIED" },
        { method: "POST", route: check, status: 200, seconds: 0.0021, decision: "CHECK_RESULT_ALLOWED" },
        { method: "POST", route: check, status: 404, seconds: 0.01 },
        { method: "GET", route: 'a "quoted" \\ route', status: 200, seconds: 11 },
      ],
      [
        { method: "POST", route: check, status: 200, seconds: 0.25, decision: "CHECK_RESULT_ALLOWED" },
        { method: "GET", route: "notFound", path: "/x", status: 404, seconds: 0 },
      ],
    ];
    for (const batch of batches) {
      for (const info of batch) {
        metrics.observeRequest(info);
        ref.observe(info);
      }
      const got = await families(metrics.registry, NAMES);
      expect(got).toEqual(await families(ref.registry, NAMES));
      expect(got.every((family) => family.length > 0)).toBe(true);
    }
    expect((await metrics.registry.getMetricsAsJSON()).find((m) => m.name === NAMES[1])).toEqual(
      (await ref.registry.getMetricsAsJSON()).find((m) => m.name === NAMES[1]),
    );
    const text = await metrics.registry.metrics();
    expect(text).toContain(`pemba_http_requests_total{route="${check}",status="200"} 4\n`);
    expect(text).toContain(
      `pemba_http_request_duration_seconds_bucket{le="0.0005",route="${check}",status="200"} 2\n`,
    );
    expect(text).toContain('pemba_check_decisions_total{decision="allowed"} 3\n');
  });
});
