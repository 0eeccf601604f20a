/**
 * A labelled counter and histogram for the series recorded on every request (HTTP requests and
 * latency, crypto operations, tokens). prom-client 15's `labels()` child still converts,
 * validates and hashes its label object on every inc/observe; here a label set is resolved once
 * into a series (its labels, and for a histogram its bucket counts in a typed array), so a
 * recording is a Map lookup and a few number updates. Both register on a prom-client Registry
 * as custom metrics: `get()` and `getForPromString()` give the values prom-client's Counter and
 * Histogram give, so /metrics is the same text, series for series and byte for byte
 * (test/unit/observability/fast-metrics.test.ts compares them).
 */
import type { Metric, Registry } from 'prom-client';

/** A metric's name, help, label names and the registries it is exposed on. */
interface FastMetricConfig {
  name: string;
  help: string;
  labelNames: readonly string[];
  registers: Registry[];
}

type Labels = Readonly<Record<string, string>>;

/** The fields prom-client's Registry reads of an exposed sample (lib/registry.js). */
interface Sample {
  labels: Record<string, string | number>;
  sharedLabels?: Labels;
  value: number;
  metricName?: string;
  exemplar?: null;
}

/** What prom-client's Registry reads of a metric's samples. */
interface MetricData {
  name: string;
  help: string;
  type: string;
  values: Sample[];
  aggregator: string;
}

/**
 * Series by their label values joined with NUL. A value holding a NUL could make two label sets
 * one key, so such a set is refused when its series would be made (with the arity checked, a
 * lookup of it can never hit a series of clean values: its key has more separators); ours are
 * code-like words, route templates and status numbers.
 */
class SeriesTable<S> {
  readonly #labelNames: readonly string[];
  readonly #make: (labels: Labels) => S;
  readonly series = new Map<string, S>();

  constructor(labelNames: readonly string[], make: (labels: Labels) => S) {
    this.#labelNames = labelNames;
    this.#make = make;
  }

  get(values: readonly string[]): S {
    // The arity is checked first: a wrong count of values holding NULs could spell a clean key.
    if (values.length !== this.#labelNames.length)
      throw new TypeError(
        `expected ${this.#labelNames.length} label values (${this.#labelNames.join(', ')})`,
      );
    const key = values.join('\0');
    let series = this.series.get(key);
    if (series === undefined) {
      series = this.#make(this.#labelsOf(values));
      this.series.set(key, series);
    }
    return series;
  }

  #labelsOf(values: readonly string[]): Labels {
    const names = this.#labelNames;
    const labels: Record<string, string> = {};
    for (let i = 0; i < names.length; i += 1) {
      const value = values[i];
      if (typeof value !== 'string' || value.includes('\0'))
        throw new TypeError(`label ${names[i]} must be a string without NUL`);
      labels[names[i]] = value;
    }
    // One object per series, for ever: the Registry caches its formatted text by identity.
    return Object.freeze(labels);
  }
}

/** Registers a custom metric: prom-client's Registry reads name and type, calls get (or getForPromString) and reset. */
function register(metric: object, registers: Registry[]): void {
  for (const registry of registers) registry.registerMetric(metric as unknown as Metric);
}

/** One counter series: its labels and its value. */
export class CounterSeries {
  readonly labels: Labels;
  value = 0;

  constructor(labels: Labels) {
    this.labels = labels;
  }

  /** Adds `by` (default 1), refusing what prom-client refuses: a non-finite or negative step. */
  inc(by = 1): void {
    if (!(by >= 0) || by === Infinity) throw new TypeError(`Counter step is not valid: ${by}`);
    this.value += by;
  }
}

/** What a counter and a histogram share: name, help, their series table, registration. */
abstract class FastMetric<S> {
  /** Read (and for OpenMetrics rewritten) by the Registry. */
  name: string;
  readonly help: string;
  abstract readonly type: string;
  readonly aggregator = 'sum';
  protected readonly table: SeriesTable<S>;

  constructor(config: FastMetricConfig, make: (labels: Labels) => S) {
    this.name = config.name;
    this.help = config.help;
    this.table = new SeriesTable(config.labelNames, make);
    register(this, config.registers);
  }

  /** The series of these label values (in labelNames order), made on first use; keep it to skip the lookup. */
  labels(...values: string[]): S {
    return this.table.get(values);
  }

  protected data(values: Sample[]): MetricData {
    const { name, help, type, aggregator } = this;
    return { name, help, type, values, aggregator };
  }
}

/** A labelled counter, exposed as prom-client's Counter exposes one. */
export class FastCounter extends FastMetric<CounterSeries> {
  readonly type = 'counter';

  constructor(config: FastMetricConfig) {
    super(config, (labels) => new CounterSeries(labels));
  }

  async get(): Promise<MetricData> {
    const values: Sample[] = [];
    for (const s of this.table.series.values()) values.push({ value: s.value, labels: s.labels });
    return this.data(values);
  }

  /** Zeroes every series in place, so a series a caller kept still counts. */
  reset(): void {
    for (const s of this.table.series.values()) s.value = 0;
  }
}

/** One histogram series: its labels, its per-bucket (not cumulative) counts, sum and count. */
export class HistogramSeries {
  readonly labels: Labels;
  readonly #bounds: readonly number[];
  /** Observations whose smallest bound at or above them is bounds[i]; above all: none (only +Inf). */
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.buckets = new Float64Array(bounds.length);
  }

  /** Records one value; `le` is inclusive, as in prom-client (a value equal to a bound is in it). */
  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.#bounds;
    const n = bounds.length;
    let i = 0;
    while (i < n && value > bounds[i]) i += 1;
    if (i < n) this.buckets[i] += 1;
    this.sum += value;
    this.count += 1;
  }

  zero(): void {
    this.buckets.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/** A labelled histogram, exposed as prom-client's Histogram exposes one. */
export class FastHistogram extends FastMetric<HistogramSeries> {
  readonly type = 'histogram';
  readonly #bounds: readonly number[];

  constructor(config: FastMetricConfig & { buckets: readonly number[] }) {
    const bounds = Object.freeze([...config.buckets]);
    for (let i = 1; i < bounds.length; i += 1)
      if (!(bounds[i] > bounds[i - 1])) throw new TypeError('buckets must be increasing');
    if (config.labelNames.includes('le')) throw new TypeError('le is a reserved label keyword');
    super(config, (labels) => new HistogramSeries(labels, bounds));
    this.#bounds = bounds;
  }

  /**
   * The samples as prom-client's Histogram.getForPromString gives them: per series the
   * cumulative `le` buckets, +Inf, _sum and _count, the series labels as sharedLabels.
   */
  async getForPromString(): Promise<MetricData> {
    const bucket = `${this.name}_bucket`;
    const sumName = `${this.name}_sum`;
    const countName = `${this.name}_count`;
    const bounds = this.#bounds;
    const values: Sample[] = [];
    for (const s of this.table.series.values()) {
      const shared = s.labels;
      let acc = 0;
      for (let i = 0; i < bounds.length; i += 1) {
        acc += s.buckets[i];
        values.push(sample({ le: bounds[i] }, shared, acc, bucket, null));
      }
      values.push(sample({ le: '+Inf' }, shared, s.count, bucket, null));
      values.push(sample({}, shared, s.sum, sumName, undefined));
      values.push(sample({}, shared, s.count, countName, undefined));
    }
    return this.data(values);
  }

  /** The samples as prom-client's Histogram.get gives them: the series labels after `le`. */
  async get(): Promise<MetricData> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, labels, ...rest }) => ({
      ...rest,
      labels: { ...labels, ...sharedLabels },
    }));
    return data;
  }

  /** Zeroes every series in place, so a series a caller kept still counts. */
  reset(): void {
    for (const s of this.table.series.values()) s.zero();
  }
}

function sample(
  labels: Record<string, string | number>,
  sharedLabels: Labels,
  value: number,
  metricName: string,
  exemplar: null | undefined,
): Sample {
  return { labels, sharedLabels, value, metricName, exemplar };
}
