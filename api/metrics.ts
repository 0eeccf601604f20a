/**
 * The API's Prometheus registry: HTTP requests by method, route template and status with their
 * latency, the domain metrics (shared/metrics: crypto, tokens, keys, conversions, audit), the
 * piscina pool's utilisation and queue depth, and the process metrics (event-loop lag included).
 * Requests are recorded by the access log (api/http/access-log.ts) and the runtime lane.
 */
import { Counter, type Registry } from 'prom-client';
import {
  FastCounter,
  FastHistogram,
  type CounterSeries,
  type HistogramSeries,
} from '../shared/metrics/fast.ts';
import {
  LATENCY_BUCKETS,
  METRIC_PREFIX,
  createDomainMetrics,
  createRegistry,
  registerPoolGauges,
  type DomainMetrics,
  type PoolGaugeSource,
} from '../shared/metrics/index.ts';

export interface Metrics {
  registry: Registry;
  /** What services record about the work they do. */
  domain: DomainMetrics;
  /** Records one request; `route` is a template or 'unmatched', never a concrete path. */
  observe(method: string, route: string, status: number, seconds: number): void;
  /** Counts a connection refused over a cap (api/http/connection-limits.ts). */
  refuseConnection(reason: ConnectionRefusal): void;
}

/** Why a connection was refused: its address's cap, the total cap, or past the reserve (closed unanswered). */
export type ConnectionRefusal = 'address' | 'total' | 'dropped';

/** The methods a label may name; anything else (a client's invention) is counted as OTHER. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Creates the registry with the HTTP, domain, pool and process metrics. */
export function createMetrics(pool: PoolGaugeSource): Metrics {
  const registry = createRegistry();
  // The per-request series are our own (shared/metrics/fast.ts), same exposition as prom-client's.
  const requests = new FastCounter({
    name: `${METRIC_PREFIX}http_requests_total`,
    help: 'HTTP requests by method, route template and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const latency = new FastHistogram({
    name: `${METRIC_PREFIX}http_request_duration_seconds`,
    help: 'HTTP request latency by method, route template and status',
    labelNames: ['method', 'route', 'status'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const refused = new Counter({
    name: `${METRIC_PREFIX}http_connections_refused_total`,
    help: 'Connections refused over the connection caps, by reason (address, total, dropped)',
    labelNames: ['reason'],
    registers: [registry],
  });
  registerPoolGauges(registry, pool);
  // Both series of a (method, route, status) resolved once, found with one lookup per request.
  const children = new Map<string, { count: CounterSeries; time: HistogramSeries }>();
  const observe = (rawMethod: string, route: string, status: number, seconds: number) => {
    const method = METHODS.has(rawMethod) ? rawMethod : 'OTHER';
    const key = `${method} ${route} ${status}`;
    let child = children.get(key);
    if (!child) {
      const labels = [method, route, String(status)];
      child = { count: requests.labels(...labels), time: latency.labels(...labels) };
      children.set(key, child);
    }
    child.count.inc();
    child.time.observe(seconds);
  };
  return {
    registry,
    domain: createDomainMetrics(registry),
    observe,
    refuseConnection: (reason) => refused.inc({ reason }),
  };
}
