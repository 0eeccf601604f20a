/**
 * The one piscina pool for CPU-heavy work (argon2id, RSA private-key operations, PQC, large
 * conversions). A full queue answers 503 with Retry-After rather than growing without bound.
 */
import type { TransferListItem } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { AppError, errorFromData } from '../shared/errors/index.ts';

export interface PoolOptions {
  threads: number;
  maxQueue: number;
}

/** The pool as the rest of the code sees it. */
export interface WorkPool {
  run<T>(task: string, input: unknown, transferList?: TransferListItem[]): Promise<T>;
  /** 0..1 share of thread time spent on tasks. */
  utilization(): number;
  queueSize(): number;
  threads(): number;
  close(): Promise<void>;
}

/** Starts the pool over workers/tasks/index.ts. */
export function createPool(opts: PoolOptions): WorkPool {
  const piscina = new Piscina({
    filename: new URL('./tasks/index.ts', import.meta.url).href,
    // One thread stays (health checks count threads); the others start on demand and end after
    // 10 s idle: each is an isolate with the whole task module graph, about 30 MB of RSS.
    minThreads: Math.min(1, opts.threads),
    maxThreads: opts.threads,
    maxQueue: opts.maxQueue,
    idleTimeout: 10_000,
  });
  let closed = false;
  return {
    async run<T>(task: string, input: unknown, transferList?: TransferListItem[]): Promise<T> {
      try {
        return (await piscina.run(input, { name: task, transferList: transferList })) as T;
      } catch (err) {
        const message = (err as Error)?.message ?? '';
        if (message === 'Task queue is at limit') {
          throw new AppError('pool_busy', 'the crypto worker pool is saturated; retry shortly', { headers: { 'Retry-After': '1' } });
        }
        // Errors cross the thread boundary as plain data (conventions rule 4).
        if (err && typeof err === 'object' && 'code' in err && typeof (err as { code: unknown }).code === 'string') throw errorFromData(err);
        throw err;
      }
    },
    utilization: () => piscina.utilization,
    queueSize: () => piscina.queueSize,
    threads: () => piscina.threads.length,
    async close() {
      if (closed) return;
      closed = true;
      await piscina.close({ force: false });
    },
  };
}
