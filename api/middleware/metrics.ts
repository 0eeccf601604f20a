/**
 * Prometheus metrics: request counts and latency by route and status, pool utilisation and the
 * default process metrics (which include event-loop lag).
 */
import type { Request, RequestHandler } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { WorkPool } from '../../workers/pool.ts';

export interface Metrics {
  registry: Registry;
  middleware: RequestHandler;
  /** Records one request (for handlers outside Express: the runtime lane). */
  observe(method: string, route: string, status: number, seconds: number): void;
}

const UUID_SEGMENT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The route label: the matched template (`/api/v3/admin/tenants/:tenantId/keys/:id`), never the
 * concrete path, so series stay bounded and a scrape lists no tenant. Express gives the pattern
 * of the last route only; req.baseUrl is the concrete mount path, so its segments that hold a
 * parameter's value are written back as `:name`, and any UUID left (a parameter of a router
 * without mergeParams) as `:id`.
 */
export function routeTemplate(req: Request): string {
  if (!req.route?.path) return 'unmatched';
  const names = new Map<string, string>();
  for (const [name, value] of Object.entries(req.params ?? {}))
    if (typeof value === 'string') names.set(value, name);
  const base = req.baseUrl
    .split('/')
    .map((segment) => {
      const name = names.get(segment);
      if (name !== undefined && segment !== '') return `:${name}`;
      return UUID_SEGMENT.test(segment) ? ':id' : segment;
    })
    .join('/');
  const path = String(req.route.path);
  // A router's own root route ('/') names the mount path itself.
  return path === '/' && base !== '' ? base : `${base}${path}`;
}

/** Creates the registry and the request-timing middleware. */
export function createMetrics(pool: WorkPool): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  new Gauge({
    name: 'worker_pool_utilization',
    help: 'Share of worker thread time spent on tasks (0..1)',
    registers: [registry],
    collect() {
      this.set(pool.utilization());
    },
  });
  new Gauge({
    name: 'worker_pool_queue_size',
    help: 'Tasks waiting for a worker thread',
    registers: [registry],
    collect() {
      this.set(pool.queueSize());
    },
  });
  // Label children resolved once per (method, route, status): prom-client hashes label objects
  // on every inc/observe otherwise, a measurable cost at tens of thousands of requests a second.
  const children = new Map<string, { count: Counter.Internal; time: Histogram.Internal<string> }>();
  const observe = (method: string, route: string, status: number, seconds: number) => {
    const key = `${method} ${route} ${status}`;
    let child = children.get(key);
    if (!child) {
      const labels = { method, route, status: String(status) };
      child = { count: requests.labels(labels), time: latency.labels(labels) };
      children.set(key, child);
    }
    child.count.inc();
    child.time.observe(seconds);
  };
  const middleware: RequestHandler = (req, res, next) => {
    const start = performance.now();
    res.once('finish', () => {
      observe(req.method, routeTemplate(req), res.statusCode, (performance.now() - start) / 1000);
    });
    next();
  };
  return { registry, middleware, observe };
}
