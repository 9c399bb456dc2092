/**
 * Prometheus metrics served at GET /metrics. One registry per server (tests start several in one process).
 */
import { collectDefaultMetrics, Registry } from "prom-client";
import { type CounterSeries, type HistogramSeries, LocalCounter, LocalHistogram } from "./local-metrics.ts";

/** What the core HTTP app reports once per request (its `observe` hook). */
export interface RequestObservation {
  route: string;
  status: number;
  seconds: number;
  decision?: "allowed" | "denied" | string;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SQL_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1];

export interface ServerMetrics {
  registry: Registry;
  observeRequest(observation: RequestObservation): void;
  observeQuery(kind: string, seconds: number): void;
}

export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "pemba_" });
  const requests = new LocalCounter(
    "pemba_http_requests_total",
    "HTTP requests answered, by route and status",
    registry,
  );
  const latency = new LocalHistogram(
    "pemba_http_request_duration_seconds",
    "HTTP request latency in seconds, by route and status",
    LATENCY_BUCKETS,
    registry,
  );
  const decisions = new LocalCounter(
    "pemba_check_decisions_total",
    "Permission check decisions, by decision (allowed/denied)",
    registry,
  );
  const queries = new LocalHistogram(
    "pemba_sql_query_duration_seconds",
    "Time spent per SQL statement, by statement kind",
    SQL_BUCKETS,
    registry,
  );
  // The series of each (route, status), decision and statement kind, looked up once.
  type RouteSeries = { count: CounterSeries; time: HistogramSeries };
  const byRoute = new Map<string, Map<number, RouteSeries>>();
  const byDecision = new Map<string, CounterSeries>();
  const byKind = new Map<string, HistogramSeries>();
  return {
    registry,
    observeRequest({ route, status, seconds, decision }) {
      let byStatus = byRoute.get(route);
      if (byStatus === undefined) {
        byStatus = new Map();
        byRoute.set(route, byStatus);
      }
      let series = byStatus.get(status);
      if (series === undefined) {
        const labels = { route, status: String(status) };
        series = { count: requests.labels(labels), time: latency.labels(labels) };
        byStatus.set(status, series);
      }
      series.count.value++;
      series.time.observe(seconds);
      if (decision !== undefined) {
        let counter = byDecision.get(decision);
        if (counter === undefined) {
          counter = decisions.labels({ decision: normalizeDecision(decision) });
          byDecision.set(decision, counter);
        }
        counter.value++;
      }
    },
    observeQuery(kind, seconds) {
      let histogram = byKind.get(kind);
      if (histogram === undefined) {
        histogram = queries.labels({ kind });
        byKind.set(kind, histogram);
      }
      histogram.observe(seconds);
    },
  };
}

/** Accepts "allowed"/"denied" as well as Permify's CHECK_RESULT_* names. */
function normalizeDecision(decision: string): string {
  if (decision === "CHECK_RESULT_ALLOWED") return "allowed";
  if (decision === "CHECK_RESULT_DENIED") return "denied";
  return decision.toLowerCase();
}
