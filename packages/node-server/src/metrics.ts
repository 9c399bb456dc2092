/**
 * Prometheus metrics served at GET /metrics (prom-client). One registry per server (tests start several in one
 * process).
 *
 * The per-request series (requests by route and status, their latency histogram, check decisions) are counted in
 * plain numbers per label set, found through two Map lookups, and handed to prom-client when it is scraped: a
 * prom-client child hashes and validates its label object on every `inc` and `observe` (1-2 µs each, three per
 * check). The request counter and the decision counter are prom-client Counters fed by their `collect` hook; the
 * latency histogram is a metric of its own (`RequestLatency`) that the registry formats as it formats its
 * Histograms.
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

/** One route and status's requests: counted here, handed to prom-client at a scrape. */
interface RequestSeries {
  readonly labels: { route: string; status: string };
  count: number;
  /** `count` as the request counter has it already. */
  counted: number;
  sum: number;
  /** Requests per latency bucket (not cumulative): LATENCY_BUCKETS, then +Inf. */
  readonly buckets: Float64Array;
}

/**
 * The request latency histogram, read from the request series at a scrape: prom-client's metric interface (what
 * `Registry.registerMetric` takes; the registry formats it as it formats a Histogram's values: the buckets with
 * `le` first, then `_sum` and `_count`, per label set).
 */
class RequestLatency {
  readonly name = "pemba_http_request_duration_seconds";
  readonly help = "HTTP request latency in seconds, by route and status";
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #series: () => Iterable<RequestSeries>;

  constructor(series: () => Iterable<RequestSeries>) {
    this.#series = series;
  }

  getForPromString() {
    const values: object[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.#series()) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((le, i) => {
        cumulative += s.buckets[i]!;
        values.push({
          labels: { le },
          sharedLabels: s.labels,
          value: cumulative,
          metricName: bucket,
          exemplar: null,
        });
      });
      values.push({
        labels: { le: "+Inf" },
        sharedLabels: s.labels,
        value: s.count,
        metricName: bucket,
        exemplar: null,
      });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same values with each value's labels whole (prom-client's `get`, for `getMetricsAsJSON`). */
  get() {
    const data = this.getForPromString();
    return {
      ...data,
      values: data.values.map((v) => {
        const { labels, sharedLabels, ...rest } = v as { labels: object; sharedLabels: object };
        return { ...rest, labels: { ...labels, ...sharedLabels } };
      }),
    };
  }

  reset(): void {
    for (const s of this.#series()) {
      s.count = s.counted = s.sum = 0;
      s.buckets.fill(0);
    }
  }
}

/** The latency bucket of `seconds`: the first bound it is at or under (prom-client's rule), else +Inf. */
function bucketOf(seconds: number): number {
  for (let i = 0; i < LATENCY_BUCKETS.length; i++) if (seconds <= LATENCY_BUCKETS[i]!) return i;
  return LATENCY_BUCKETS.length;
}

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
  const allSeries: RequestSeries[] = [];
  new Counter({
    name: "pemba_http_requests_total",
    help: "HTTP requests answered, by route and status",
    labelNames: ["route", "status"],
    registers: [registry],
    collect() {
      for (const s of allSeries) {
        if (s.count > s.counted) this.inc(s.labels, s.count - s.counted);
        s.counted = s.count;
      }
    },
  });
  registry.registerMetric(new RequestLatency(() => allSeries) as never);
  /** Decisions per name ("allowed", "denied", ...) since the last scrape. */
  const decided = new Map<string, number>();
  new Counter({
    name: "pemba_check_decisions_total",
    help: "Permission check decisions, by decision (allowed/denied)",
    labelNames: ["decision"],
    registers: [registry],
    collect() {
      for (const [decision, n] of decided) if (n > 0) this.inc({ decision }, n);
      decided.clear();
    },
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
  gauge(
    "pemba_working_set_max_bytes",
    "Estimated bytes the working set's entries hold at most (half of --replica-memory: the rest is left for V8's garbage)",
    (w) => w.maxBytes,
  );
  gauge("pemba_working_set_entries", "Entries the replica's working set holds", (w) => w.entries);
  gauge(
    "pemba_working_set_evictions",
    "Entries evicted from the working set since the start",
    (w) => w.evictions,
  );
  // by route, then by status
  const routeSeries = cached((route: string) => {
    const byStatus = new Map<number, RequestSeries>();
    return (status: number) => {
      let series = byStatus.get(status);
      if (series === undefined) {
        series = {
          labels: { route, status: String(status) },
          count: 0,
          counted: 0,
          sum: 0,
          buckets: new Float64Array(LATENCY_BUCKETS.length + 1),
        };
        byStatus.set(status, series);
        allSeries.push(series);
      }
      return series;
    };
  });
  const decisionName = cached(normalizeDecision);
  const querySeries = cached((kind: string) => queries.labels(kind));
  return {
    registry,
    observeRequest({ route, status, seconds, decision }) {
      const series = routeSeries(route)(status);
      series.count++;
      // prom-client refuses a value that is not a finite number; a clock cannot give one, but a hook must not throw
      if (Number.isFinite(seconds)) {
        series.sum += seconds;
        series.buckets[bucketOf(seconds)]!++;
      }
      if (decision !== undefined) {
        const name = decisionName(decision);
        decided.set(name, (decided.get(name) ?? 0) + 1);
      }
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
