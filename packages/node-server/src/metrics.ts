/**
 * Prometheus metrics served at GET /metrics. One registry per server (tests start several in one process).
 */
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

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
  const queries = new Histogram({
    name: "pemba_sql_query_duration_seconds",
    help: "Time spent per SQL statement, by statement kind",
    labelNames: ["kind"],
    buckets: SQL_BUCKETS,
    registers: [registry],
  });
  // Label lookups (prom-client hashes the label object on every call) are done once per label set: the hot path
  // keeps the child counter/histogram of each (route, status), decision and statement kind.
  type CounterChild = ReturnType<typeof requests.labels>;
  type HistogramChild = ReturnType<typeof latency.labels>;
  const byRouteStatus = new Map<string, { count: CounterChild; time: HistogramChild }>();
  const byDecision = new Map<string, CounterChild>();
  const byKind = new Map<string, ReturnType<typeof queries.labels>>();
  return {
    registry,
    observeRequest({ route, status, seconds, decision }) {
      const key = `${status} ${route}`;
      let children = byRouteStatus.get(key);
      if (children === undefined) {
        const labels = { route, status: String(status) };
        children = { count: requests.labels(labels), time: latency.labels(labels) };
        byRouteStatus.set(key, children);
      }
      children.count.inc();
      children.time.observe(seconds);
      if (decision !== undefined) {
        let counter = byDecision.get(decision);
        if (counter === undefined) {
          counter = decisions.labels({ decision: normalizeDecision(decision) });
          byDecision.set(decision, counter);
        }
        counter.inc();
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
