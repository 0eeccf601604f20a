/**
 * The one piscina pool for CPU-heavy work (argon2id, RSA private-key operations, PQC, large
 * conversions). A full queue answers 503 with Retry-After rather than growing without bound.
 */
import type { TransferListItem } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { errorFromData, problem } from '../../shared/errors/index.ts';
import { poolThreadEnv } from '../../shared/node-flags.ts';

export interface PoolOptions {
  threads: number;
  maxQueue: number;
  /** What the 503 of a full queue names (default: the crypto worker pool). */
  label?: string;
  /** The task entry file (default api/threads/tasks/index.ts; tests give others). */
  filename?: string;
}

/** The pool as the rest of the code sees it. */
export interface WorkPool {
  run<T>(task: string, input: unknown, transferList?: TransferListItem[]): Promise<T>;
  /** 0..1 share of thread time spent on tasks. */
  utilization(): number;
  queueSize(): number;
  threads(): number;
  /** False once close() has begun: the pool takes no more tasks. */
  open(): boolean;
  close(): Promise<void>;
}

/** piscina's message when close() waited its closeTimeout for running tasks (errors.ts). */
const CLOSE_TIMEOUT = 'Close operation timed out';

/** Starts the pool over api/threads/tasks/index.ts. */
export function createPool(opts: PoolOptions): WorkPool {
  const piscina = new Piscina({
    filename: opts.filename ?? new URL('./tasks/index.ts', import.meta.url).href,
    // Threads start on demand and end after 10 s idle, the last one too: each is an isolate of
    // 15 MB plus the task modules it has loaded (up to ~25 MB more), measured on Postgres, where
    // an idle API is ~120 MB in all. A task after a quiet spell pays the thread's start, ~40 ms
    // with the compile cache warm.
    minThreads: 0,
    maxThreads: opts.threads,
    maxQueue: opts.maxQueue,
    idleTimeout: 10_000,
    // No resourceLimits.maxYoungGenerationSizeMb: under the process's --max-semi-space-size
    // (shared/node-flags.ts) V8 ignores it (scavenges of a thread measured the same at 2 to 32).
    env: poolThreadEnv(),
  });
  let closed = false;
  return {
    async run<T>(task: string, input: unknown, transferList?: TransferListItem[]): Promise<T> {
      try {
        return (await piscina.run(input, { name: task, transferList: transferList })) as T;
      } catch (err) {
        const message = (err as Error)?.message ?? '';
        if (message === 'Task queue is at limit') {
          throw problem(
            'pool_busy',
            `the ${opts.label ?? 'crypto worker pool'} is saturated; retry shortly`,
            {
              headers: { 'Retry-After': '1' },
            },
          );
        }
        // Errors cross the thread boundary as plain data.
        if (
          err &&
          typeof err === 'object' &&
          'code' in err &&
          typeof (err as { code: unknown }).code === 'string'
        )
          throw errorFromData(err);
        throw err;
      }
    },
    utilization: () => piscina.utilization,
    queueSize: () => piscina.queueSize,
    threads: () => piscina.threads.length,
    open: () => !closed,
    async close() {
      if (closed) return;
      closed = true;
      // piscina waits up to its closeTimeout (30 s) for running tasks, then ends the threads
      // anyway and reports the wait as an 'error' event, which with no listener is thrown out of
      // close(). A thread that died in a task can stay counted as busy (seen in CI after the
      // conversion-thread tests' deliberate exits), so that wait may run out: the pool is still
      // closed. Any other error is thrown as before.
      const onError = (err: Error) => {
        if (err?.message !== CLOSE_TIMEOUT) throw err;
      };
      piscina.on('error', onError);
      try {
        await piscina.close({ force: false });
      } finally {
        piscina.off('error', onError);
      }
    },
  };
}
