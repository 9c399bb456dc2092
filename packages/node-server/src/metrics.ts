/**
 * Prometheus metrics served at GET /metrics (prom-client). One registry per server (tests start several in one
 * process). The per-request series are prom-client's children, looked up once per label set (`labels()` hashes the
 * label object on every call) and kept.
 */
import type { RequestInfo } from "@pemba/core";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SQL_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1];

export interface ServerMetrics {
  registry: Registry;
  /** The core app's `observe` hook: route and status series, check decisions. */
  observeRequest(info: RequestInfo): void;
  observeQuery(kind: string, seconds: number): void;
  /** A decision record dropped because the decision log's buffer was full. */
  decisionDropped(): void;
  /** Reports the replica's working set (estimated bytes, entries, evictions) on every scrape. */
  watchWorkingSet(read: () => WorkingSetReading | undefined): void;
}

export interface WorkingSetReading {
  bytes: number;
  entries: number;
  evictions: number;
  maxBytes: number;
}

type CounterChild = ReturnType<Counter<string>["labels"]>;
type HistogramChild = ReturnType<Histogram<string>["labels"]>;

/** `create(key)` once per key, then the kept value. */
function cached<V>(create: (key: string) => V): (key: string) => V {
  const children = new Map<string, V>();
  return (key) => {
    let child = children.get(key);
    if (child === undefined) {
      child = create(key);
      children.set(key, child);
    }
    return child;
  };
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
  const dropped = new Counter({
    name: "pemba_decision_log_dropped_total",
    help: "Decision log records dropped because the buffer was full (the sink did not keep up)",
    registers: [registry],
  });
  let workingSet: () => WorkingSetReading | undefined = () => undefined;
  const gauge = (name: string, help: string, read: (w: WorkingSetReading) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const w = workingSet();
        if (w !== undefined) this.set(read(w));
      },
    });
  gauge(
    "pemba_working_set_bytes",
    "Estimated bytes of the rows the replica's working set holds",
    (w) => w.bytes,
  );
  gauge("pemba_working_set_max_bytes", "The working set's byte budget (--replica-memory)", (w) => w.maxBytes);
  gauge("pemba_working_set_entries", "Entries the replica's working set holds", (w) => w.entries);
  gauge(
    "pemba_working_set_evictions",
    "Entries evicted from the working set since the start",
    (w) => w.evictions,
  );
  // by route, then by status
  const routeSeries = cached((route: string) => {
    const byStatus = new Map<number, { count: CounterChild; time: HistogramChild }>();
    return (status: number) => {
      let series = byStatus.get(status);
      if (series === undefined) {
        series = {
          count: requests.labels(route, String(status)),
          time: latency.labels(route, String(status)),
        };
        byStatus.set(status, series);
      }
      return series;
    };
  });
  const decisionSeries = cached((decision: string) => decisions.labels(normalizeDecision(decision)));
  const querySeries = cached((kind: string) => queries.labels(kind));
  return {
    registry,
    observeRequest({ route, status, seconds, decision }) {
      const series = routeSeries(route)(status);
      series.count.inc();
      series.time.observe(seconds);
      if (decision !== undefined) decisionSeries(decision).inc();
    },
    observeQuery(kind, seconds) {
      querySeries(kind).observe(seconds);
    },
    decisionDropped() {
      dropped.inc();
    },
    watchWorkingSet(read) {
      workingSet = read;
    },
  };
}

/** Accepts "allowed"/"denied" as well as Permify's CHECK_RESULT_* names. */
function normalizeDecision(decision: string): string {
  if (decision === "CHECK_RESULT_ALLOWED") return "allowed";
  if (decision === "CHECK_RESULT_DENIED") return "denied";
  return decision.toLowerCase();
}
