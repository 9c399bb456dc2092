/**
 * Counters and histograms for the per-request hot path, served through a prom-client Registry.
 *
 * prom-client's own `labels(...).inc()` / `.observe()` validate and hash the label object on every call (about 2 us
 * per request together, measured under load). These keep one plain series object per label set, looked up once by
 * the caller, and give the registry the same values in the same shape as prom-client's Counter and Histogram
 * (`getForPromString` / `get`), so `/metrics` prints the same text; a test compares the two byte for byte.
 */
import type { Registry } from "prom-client";

type Labels = Record<string, string>;

interface PromValue {
  labels: Record<string, string | number>;
  sharedLabels?: Labels;
  value: number;
  metricName?: string;
  /** prom-client's bucket lines carry `exemplar: null` when exemplars are off */
  exemplar?: null;
}

interface PromMetric {
  name: string;
  help: string;
  type: "counter" | "histogram";
  values: PromValue[];
  aggregator: "sum";
}

/** The part of prom-client's metric interface a Registry uses. */
abstract class LocalMetric<Series> {
  protected series = new Map<string, { labels: Labels; series: Series }>();
  readonly aggregator = "sum";
  readonly name: string;
  readonly help: string;

  constructor(name: string, help: string, registry: Registry) {
    this.name = name;
    this.help = help;
    registry.registerMetric(this as never);
  }

  protected abstract create(): Series;
  protected abstract zero(series: Series): void;
  protected abstract values(labels: Labels, series: Series, splay: boolean): PromValue[];
  abstract readonly type: "counter" | "histogram";

  /** The series of one label set (created at zero on first use). Keep it: the lookup is the slow part. */
  labels(labels: Labels): Series {
    const key = JSON.stringify(labels);
    let entry = this.series.get(key);
    if (entry === undefined) {
      entry = { labels: { ...labels }, series: this.create() };
      this.series.set(key, entry);
    }
    return entry.series;
  }

  getForPromString(): PromMetric {
    return this.metric(false);
  }

  get(): PromMetric {
    return this.metric(true);
  }

  /** Zeroes every series in place (callers keep their series objects). */
  reset(): void {
    for (const entry of this.series.values()) this.zero(entry.series);
  }

  private metric(splay: boolean): PromMetric {
    const values: PromValue[] = [];
    for (const { labels, series } of this.series.values()) values.push(...this.values(labels, series, splay));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export interface CounterSeries {
  value: number;
}

export class LocalCounter extends LocalMetric<CounterSeries> {
  readonly type = "counter";

  protected create(): CounterSeries {
    return { value: 0 };
  }

  protected zero(series: CounterSeries): void {
    series.value = 0;
  }

  protected values(labels: Labels, series: CounterSeries): PromValue[] {
    return [{ labels: { ...labels }, value: series.value }];
  }
}

export class HistogramSeries {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  private readonly bounds: readonly number[];

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length);
  }

  /** As prom-client: the value counts in the first bucket whose upper bound is >= it (and always in +Inf). */
  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

export class LocalHistogram extends LocalMetric<HistogramSeries> {
  readonly type = "histogram";
  private readonly bounds: readonly number[];

  constructor(name: string, help: string, bounds: readonly number[], registry: Registry) {
    super(name, help, registry);
    this.bounds = bounds;
  }

  protected create(): HistogramSeries {
    return new HistogramSeries(this.bounds);
  }

  protected zero(series: HistogramSeries): void {
    series.counts.fill(0);
    series.sum = 0;
    series.count = 0;
  }

  protected values(labels: Labels, series: HistogramSeries, splay: boolean): PromValue[] {
    // prom-client: bucket lines carry `le` first and the series labels as shared labels (merged by `get()`)
    const line = (
      extra: Record<string, string | number>,
      value: number,
      metricName: string,
      exemplar?: null,
    ): PromValue =>
      splay
        ? { labels: { ...extra, ...labels }, value, metricName, exemplar }
        : { labels: extra, sharedLabels: labels, value, metricName, exemplar };
    const out: PromValue[] = [];
    let cumulative = 0;
    for (let i = 0; i < this.bounds.length; i++) {
      cumulative += series.counts[i]!;
      out.push(line({ le: this.bounds[i]! }, cumulative, `${this.name}_bucket`, null));
    }
    out.push(line({ le: "+Inf" }, series.count, `${this.name}_bucket`, null));
    out.push(line({}, series.sum, `${this.name}_sum`));
    out.push(line({}, series.count, `${this.name}_count`));
    return out;
  }
}
