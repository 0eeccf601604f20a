/**
 * The worker process's metrics and its own small HTTP port (WORKER_METRICS_PORT): GET /metrics
 * for Prometheus and GET /healthz for a supervisor (the Docker healthcheck). The worker has no
 * API to hang them on and verifies no tokens, so the port is bound to loopback by default
 * (WORKER_METRICS_HOST): the series hold no tenant, key or job id (labels are the queue, a job
 * state, an outcome, a CMS type), so a scraper on a private network may be let in by binding a
 * private interface, with no credential to hand out and rotate.
 */
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Logger } from '../shared/logger.ts';
import {
  METRIC_PREFIX,
  createDomainMetrics,
  createRegistry,
  type DomainMetrics,
} from '../shared/metrics/index.ts';

/** How a job ended on this worker. */
export type JobOutcome = 'completed' | 'failed' | 'retried' | 'cancelled';

/** The job states whose depth is reported, as BullMQ's getJobCounts names them. */
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const;

/** What reads a queue's depth (a BullMQ Queue fits it). */
export interface QueueDepthSource {
  name: string;
  getJobCounts(...states: string[]): Promise<Record<string, number>>;
}

export interface WorkerMetrics {
  registry: Registry;
  domain: DomainMetrics;
  /** Counts one job that ended, with how long it ran. */
  jobEnded(queue: string, outcome: JobOutcome, seconds: number): void;
  /** Reports the queue's depth per state at each scrape. */
  watchQueue(queue: QueueDepthSource): void;
}

/** Creates the worker's registry: jobs, queue depth, conversions and the process metrics. */
export function createWorkerMetrics(logger: Logger): WorkerMetrics {
  const registry = createRegistry();
  const registers = [registry];
  const jobs = new Counter({
    name: `${METRIC_PREFIX}jobs_total`,
    help: 'Jobs that ended on this worker, by queue and outcome (retried: a transient fault, tried again)',
    labelNames: ['queue', 'outcome'],
    registers,
  });
  const durations = new Histogram({
    name: `${METRIC_PREFIX}job_duration_seconds`,
    help: 'Run time of jobs on this worker, by queue and outcome',
    labelNames: ['queue', 'outcome'],
    buckets: [0.05, 0.25, 1, 5, 15, 60, 300, 900, 3600],
    registers,
  });
  const watched: QueueDepthSource[] = [];
  new Gauge({
    name: `${METRIC_PREFIX}queue_jobs`,
    help: 'Jobs in the queue by state, as Redis holds them (shared by every worker of the queue)',
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      for (const queue of watched) {
        try {
          const counts = await queue.getJobCounts(...QUEUE_STATES);
          for (const state of QUEUE_STATES)
            this.set({ queue: queue.name, state }, counts[state] ?? 0);
        } catch (err) {
          // Redis away: the scrape still answers, without a depth it cannot know.
          this.reset();
          logger.debug({ err: (err as Error).message }, 'queue depth unavailable for metrics');
        }
      }
    },
  });
  return {
    registry,
    domain: createDomainMetrics(registry),
    jobEnded(queue, outcome, seconds) {
      jobs.inc({ queue, outcome });
      durations.observe({ queue, outcome }, seconds);
    },
    watchQueue(queue) {
      watched.push(queue);
    },
  };
}

const ALIVE = JSON.stringify({ status: 'ok' });
const STOPPED = JSON.stringify({ status: 'stopped' });

/**
 * Serves GET /metrics and GET /healthz (200 while the worker takes jobs, 503 once it stopped) on
 * host:port; resolves with the server once it listens, or rejects with the listen error.
 */
export async function serveWorkerMetrics(
  metrics: WorkerMetrics,
  opts: { host: string; port: number; running: () => boolean },
): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
    } else if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    } else if (path === '/healthz') {
      const up = opts.running();
      res
        .writeHead(up ? 200 : 503, { 'Content-Type': 'application/json' })
        .end(up ? ALIVE : STOPPED);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
