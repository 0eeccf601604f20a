/**
 * The domain metrics of Keyward, in the `keyward_` namespace, shared by the API and the worker
 * (each process has its own registry, scraped on its own /metrics). Every label takes its value
 * from a closed set fixed in code (an operation name, a key type, a grant, an error code), never
 * from a request: a tenant, kid or job id in a label would grow the series without bound and
 * list tenants to whoever scrapes.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { FastCounter, FastHistogram } from './fast.ts';

/** The prefix of every series Keyward exposes. */
export const METRIC_PREFIX = 'keyward_';

/** Latency buckets (seconds) from sub-millisecond crypto to multi-second conversions. */
export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
];
/** Conversion durations: from a small file to a multi-GiB stream. */
const CONVERSION_BUCKETS = [0.01, 0.05, 0.25, 1, 5, 15, 60, 300, 1800];
/** Conversion throughput (bytes/s): 1 MB/s to 2 GB/s. */
const THROUGHPUT_BUCKETS = [1e6, 1e7, 5e7, 1e8, 2.5e8, 5e8, 1e9, 2e9];

/** A registry with the process metrics (memory, CPU, event-loop lag, GC) under the prefix. */
export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({
    register: registry,
    prefix: METRIC_PREFIX,
    eventLoopMonitoringPrecision: 20,
  });
  return registry;
}

/**
 * Outcome of an operation: done, refused (the caller's input or rights), failed on our side, or
 * aborted (the client left, a job was cancelled).
 */
export type Outcome = 'success' | 'refused' | 'error' | 'aborted';

/** The outcome label of an error: its HTTP status says whose fault it was. */
export function outcomeOf(err: unknown): Outcome {
  if (err === undefined) return 'success';
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' && status < 500 ? 'refused' : 'error';
}

/** What the API and the worker record about the work they do. */
export interface DomainMetrics {
  /** One runtime crypto operation (encrypt, sign, ...) on a key of a type, with its latency. */
  cryptoOperation(operation: string, keyType: string, outcome: Outcome, seconds: number): void;
  /** A token issued (reason 'issued') or refused (reason: the OAuth error or problem code). */
  token(grant: string, outcome: 'issued' | 'refused', reason: string): void;
  /** A key lifecycle event (create, import, rotate, revoke, ...). */
  keyEvent(event: string): void;
  /** One PKCS#7/CMS conversion: its input type, outcome, bytes read and duration. */
  conversion(inputType: string, outcome: Outcome, bytes: number, seconds: number): void;
  /** An audit write that failed: 'unavailable' (retried) or 'refused' (set aside), or 'lost' events. */
  auditFailure(reason: 'unavailable' | 'refused' | 'lost'): void;
  /** A failed decryption of content (source: runtime, conversion, stream, job). */
  decryptionFailure(source: string): void;
  /** A principal spent its decryption-failure budget on a key (once per window). */
  decryptionBudgetExhausted(source: string): void;
  /** A sealed item a master-key rewrap handled: rewrapped, raced (another writer won), unopenable. */
  rewrapItem(outcome: 'rewrapped' | 'raced' | 'unopenable'): void;
}

/** A label value as it may appear: a short code-like word, else 'other' (defence in depth). */
const CODE_LIKE = /^[A-Za-z0-9_.:-]{1,48}$/;
const bounded = (value: string): string => (CODE_LIKE.test(value) ? value : 'other');

/** Registers the domain metrics on a registry. */
export function createDomainMetrics(registry: Registry): DomainMetrics {
  const registers = [registry];
  // The two series recorded per request are our own (./fast.ts): prom-client re-hashes labels
  // on every observe. The rare ones stay on prom-client.
  const cryptoOps = new FastHistogram({
    name: `${METRIC_PREFIX}crypto_operation_duration_seconds`,
    help: 'Runtime crypto operations by operation, key type and outcome, with their latency',
    labelNames: ['operation', 'key_type', 'outcome'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const tokens = new FastCounter({
    name: `${METRIC_PREFIX}tokens_total`,
    help: 'Access tokens issued and refused, by grant, outcome and reason',
    labelNames: ['grant', 'outcome', 'reason'],
    registers,
  });
  const keyEvents = new Counter({
    name: `${METRIC_PREFIX}key_events_total`,
    help: 'Key lifecycle events (create, import, rotate, update, state changes)',
    labelNames: ['event'],
    registers,
  });
  const conversions = new Histogram({
    name: `${METRIC_PREFIX}conversion_duration_seconds`,
    help: 'PKCS#7/CMS to JOSE conversions by input type and outcome, with their duration',
    labelNames: ['input_type', 'outcome'],
    buckets: CONVERSION_BUCKETS,
    registers,
  });
  const conversionBytes = new Counter({
    name: `${METRIC_PREFIX}conversion_bytes_total`,
    help: 'Bytes of PKCS#7/CMS input read by conversions, by input type and outcome',
    labelNames: ['input_type', 'outcome'],
    registers,
  });
  const throughput = new Histogram({
    name: `${METRIC_PREFIX}conversion_throughput_bytes_per_second`,
    help: 'Input bytes per second of each successful conversion, by input type',
    labelNames: ['input_type'],
    buckets: THROUGHPUT_BUCKETS,
    registers,
  });
  const auditFailures = new Counter({
    name: `${METRIC_PREFIX}audit_write_failures_total`,
    help: 'Audit writes that failed: unavailable (kept and retried), refused (set aside) or lost (buffer full)',
    labelNames: ['reason'],
    registers,
  });
  const decryptionFailures = new Counter({
    name: `${METRIC_PREFIX}decryption_failures_total`,
    help: 'Failed decryptions of content by source (runtime, conversion, stream, job)',
    labelNames: ['source'],
    registers,
  });
  const budgetsExhausted = new Counter({
    name: `${METRIC_PREFIX}decryption_budget_exhausted_total`,
    help: 'Principals that spent their decryption-failure budget on a key (DECRYPT_FAILURE_BUDGET), by source',
    labelNames: ['source'],
    registers,
  });
  const rewrapItems = new Counter({
    name: `${METRIC_PREFIX}master_key_rewrap_items_total`,
    help: 'Sealed items a master-key rewrap handled: rewrapped under the newest key, raced (another instance rewrapped it first) or unopenable',
    labelNames: ['outcome'],
    registers,
  });
  return {
    rewrapItem(outcome) {
      rewrapItems.inc({ outcome });
    },
    decryptionFailure(source) {
      decryptionFailures.inc({ source: bounded(source) });
    },
    decryptionBudgetExhausted(source) {
      budgetsExhausted.inc({ source: bounded(source) });
    },
    cryptoOperation(operation, keyType, outcome, seconds) {
      cryptoOps.labels(bounded(operation), bounded(keyType), outcome).observe(seconds);
    },
    token(grant, outcome, reason) {
      tokens.labels(bounded(grant), outcome, bounded(reason)).inc();
    },
    keyEvent(event) {
      keyEvents.inc({ event: bounded(event) });
    },
    conversion(inputType, outcome, bytes, seconds) {
      const labels = { input_type: bounded(inputType), outcome };
      conversions.observe(labels, seconds);
      conversionBytes.inc(labels, bytes);
      if (outcome === 'success' && seconds > 0)
        throughput.observe({ input_type: labels.input_type }, bytes / seconds);
    },
    auditFailure(reason) {
      auditFailures.inc({ reason });
    },
  };
}

/** What the pool gauges read (api/threads/pool.ts WorkPool fits it). */
export interface PoolGaugeSource {
  utilization(): number;
  queueSize(): number;
  threads(): number;
}

/** Pool utilisation, queue depth and thread count, read at scrape time. */
export function registerPoolGauges(registry: Registry, pool: PoolGaugeSource): void {
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name: `${METRIC_PREFIX}${name}`,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  gauge('pool_utilization', 'Share of worker thread time spent on tasks (0..1)', () =>
    pool.utilization(),
  );
  gauge('pool_queue_size', 'Tasks waiting for a worker thread', () => pool.queueSize());
  gauge('pool_threads', 'Worker threads running', () => pool.threads());
}
